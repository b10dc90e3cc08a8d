// Shared by the parts of `flopscope account` (cmd_account.cpp: the model table and `train`;
// account_predict.cpp: --predict): exact numbers in text and in JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flopscope/checked.hpp"
#include "flopscope/model.hpp"

namespace flopscope::cli {

// "6,300,000,000,000,000,000,000,000 (6.30e24)": exact, then short; small values exact alone.
std::string exact_and_short(Count128 value);

// A count as a JSON number, exact at any size: counts that fit int64 are ordinary numbers, larger
// ones are written by dump_exact as their decimal digits (JSON numbers have no size limit; Python's
// json reads them exactly).
nlohmann::json json_count(Count128 value);
std::string dump_exact(const nlohmann::json& value);

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

}  // namespace flopscope::cli
