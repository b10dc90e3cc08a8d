// Shared by the parts of `flopscope account`: cmd_account.cpp (dispatch and help),
// account_numbers.cpp (exact numbers, option values), account_config.cpp (--model, --config),
// account_model.cpp (the per-layer table), account_train.cpp (`train`), account_predict.cpp
// (--predict); table.hpp (the tables, built once, printed as text or JSON).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/model.hpp"
#include "flopscope/peaks.hpp"

namespace flopscope::cli {

// "6,300,000,000,000,000,000,000,000 (6.30e24)": exact, then short; small values exact alone.
std::string exact_and_short(Count128 value);

// A count as a JSON number, exact at any size: counts that fit int64 are ordinary numbers, larger
// ones are written by dump_exact as their decimal digits (JSON numbers have no size limit; Python's
// json reads them exactly).
nlohmann::json json_count(Count128 value);
std::string dump_exact(const nlohmann::json& value);

// ---- option values (UsageError naming the option and the text otherwise) ----

double fraction_option(const std::string& option, const std::string& text);  // (0, 1]: "0.5", "50%"
double seconds_option(const std::string& option, const std::string& text);   // "0.35s", "350ms", "350us"
std::int64_t memory_option(const std::string& option, const std::string& text);  // "8x80GB", "640GiB"
// --device NAME: a row of the GPU peaks table (find_gpu_by_name), else a UsageError that lists
// them and points to --peak.
const GpuSpec& gpu_option(const std::string& text);
// A rate per second: "989e12", "989T", "989TFLOP/s" (unit "FLOP/s"); "3.35TB/s", "3350GB/s" ("B/s").
double rate_option(const std::string& option, const std::string& text, std::string_view unit);

// ---- models ----

TransformerConfig preset_option(const std::string& name);  // --model NAME
TransformerConfig read_config(const std::string& path);    // --config FILE.json
TransformerConfig read_hf_config(const std::string& path); // --hf-config config.json or its folder
nlohmann::json config_json(const TransformerConfig& config);
std::string config_key_help();  // one line per --config key: name, meaning, default

// What `flopscope account` accounts for: a transformer (--model, --config) or the lecture's deep
// linear MLP (--mlp), as its layers and their sums.
struct Network {
  std::string name;         // "gpt2-small", "mlp-4096x8"
  std::string description;  // one line for people
  nlohmann::json head;      // the JSON fields before "layers": "model" or "mlp", "batch", ...
  std::vector<LayerAccount> layers;
  std::int64_t tokens = 0;  // rows of one step: batch x seq, or the MLP's batch
  LayerTotals totals;       // of the layers
  FlopTotals step() const { return totals.forward + totals.backward; }
};

// The network's account as `flopscope account --json` writes it (head, "layers", "totals").
nlohmann::json network_json(const Network& network);

// flopscope account --predict RUN_DIR: prints (or writes as JSON) the predicted step of `network`
// from the run's matmul results; UsageError for a directory without any.
int account_predict(const std::string& run_dir, const Network& network, bool json);

// The subcommands: `flopscope account [options]`, `flopscope account train` and `... infer`.
int account_model(const Args& args);
int account_train(const Args& args);
int account_infer(const Args& args);

}  // namespace flopscope::cli
