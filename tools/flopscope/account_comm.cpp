// flopscope account train --busbw: the communication of a data-parallel training step (lib's
// comm.hpp: Note [data-parallel communication]) beside its compute, per ZeRO/FSDP stage:
//   flopscope account train --model gpt2-small --devices 8 --busbw 400GB/s --compute-time 50ms
//   flopscope account train --model gpt2-small --devices 8 --busbw 400GB/s --batch 8 --seq 1024 --device h100 --mfu 0.4
//   flopscope account train --params 7e9 --devices 64 --busbw results/runs/<id> --sharding zero3 [--json]
// --busbw takes a rate (400GB/s, 3.2e11, 25GiB/s) or a run directory: its bench_collectives.json's
// all_reduce busbw at the largest count that ran (NCCL's before MPI's; the medians where there are
// repetitions; the best of the placements and ops). The compute time is given
// (--compute-time) or the step's FLOPs (PyTorch's convention) on --device at --mfu for --batch
// sequences of --seq per rank.
#include "account_comm.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "account.hpp"
#include "cli_numbers.hpp"
#include "table.hpp"
#include "flopscope/comm.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/model.hpp"
#include "flopscope/peaks.hpp"
#include "flopscope/training.hpp"

namespace flopscope::cli {

namespace {

using nlohmann::json;

// A positive number with an optional unit suffix, scaled: "400GB/s" with {"GB/s", 1e9}.
std::optional<double> number_with_unit(std::string_view text, std::initializer_list<std::pair<const char*, double>> units) {
  double scale = 1;
  for (const auto& [unit, factor] : units) {
    const std::string_view u(unit);
    if (text.size() > u.size() && text.ends_with(u)) {
      text.remove_suffix(u.size());
      scale = factor;
      break;
    }
  }
  const std::string digits(text);
  char* end = nullptr;
  const double value = std::strtod(digits.c_str(), &end);
  if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(value) || value <= 0) return std::nullopt;
  return value * scale;
}

double rate_option(const std::string& text) {
  auto value = number_with_unit(text, {{"GiB/s", 1073741824.0}, {"MiB/s", 1048576.0}, {"GB/s", 1e9}, {"MB/s", 1e6},
                                       {"TB/s", 1e12}, {"B/s", 1}});
  if (!value) throw UsageError{"--busbw: expected a rate (400GB/s, 3.2e11) or a run directory (got '" + text + "')"};
  return *value;
}

double seconds_value(const std::string& option, const std::string& text) {
  auto value = number_with_unit(text, {{"ms", 1e-3}, {"us", 1e-6}, {"s", 1}});
  if (!value) throw UsageError{option + ": expected a positive time (50ms, 0.35s, 0.35) (got '" + text + "')"};
  return *value;
}

std::int64_t count_value(const std::string& option, const std::string& text) {
  auto value = number_with_unit(text, {});
  if (!value || *value != std::floor(*value) || *value >= 9.2e18)
    throw UsageError{option + ": expected a positive whole number (got '" + text + "')"};
  return static_cast<std::int64_t>(*value);
}

// The all_reduce busbw of a run directory's bench_collectives.json, and where it came from.
std::pair<double, std::string> measured_busbw(const std::filesystem::path& dir) {
  const auto file = dir / "bench_collectives.json";
  std::ifstream in(file);
  if (!in) throw UsageError{"--busbw: " + dir.string() + " has no bench_collectives.json"};
  // Google Benchmark writes NaN for the cv of a counter whose mean is 0: null here.
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::size_t at = 0; (at = text.find(": NaN", at)) != std::string::npos;) text.replace(at, 5, ": null");
  json data;
  try {
    data = json::parse(text);
  } catch (const json::exception&) {
    throw UsageError{"--busbw: " + file.string() + " is not JSON"};
  }
  double best_busbw = 0;
  std::string best_name;
  std::int64_t best_n = -1;
  bool best_nccl = false, best_median = false;
  for (const auto& b : data.value("benchmarks", json::array())) {
    const std::string name = b.value("run_name", b.value("name", ""));
    // One entry per case: its median over the repetitions, or its single run.
    const bool aggregate = b.value("run_type", "") == "aggregate";
    if (b.value("error_occurred", false) || name.find("/coll=all_reduce/") == std::string::npos ||
        !b.contains("busbw") || !b["busbw"].is_number() || (aggregate && b.value("aggregate_name", "") != "median"))
      continue;
    const bool nccl = name.starts_with("collectives/nccl/");
    const auto at = name.find("/n=");
    const std::int64_t n = at == std::string::npos ? 0 : std::atoll(name.c_str() + at + 3);
    const double busbw = b["busbw"].get<double>();
    if (std::make_tuple(nccl, n, aggregate, busbw) > std::make_tuple(best_nccl, best_n, best_median, best_busbw))
      best_busbw = busbw, best_name = name, best_n = n, best_nccl = nccl, best_median = aggregate;
  }
  if (best_n < 0) throw UsageError{"--busbw: " + file.string() + " has no all_reduce case that ran"};
  if (const auto suffix = best_name.rfind("/manual_time"); suffix != std::string::npos) best_name.erase(suffix);
  return {best_busbw, "measured: " + best_name + " in " + file.string()};
}

struct Options {
  std::optional<TransformerConfig> model;
  std::optional<std::int64_t> params, batch, seq;
  std::int64_t devices = 0;
  double busbw = 0;
  std::string busbw_source;
  std::optional<double> compute_seconds, mfu;
  const GpuSpec* device = nullptr;
  DType dtype = DType::bf16;
  std::optional<Sharding> sharding;  // none: every stage
  bool json = false;
};

Options read_options(const Args& args) {
  Options o;
  OptionReader options(args);
  while (!options.done()) {
    const std::string option(options.name());
    if (option == "--model") {
      const std::string name = options.take_value();
      const TransformerConfig* preset = find_preset(name);
      if (!preset) throw UsageError{"--model: unknown model '" + name + "'"};
      o.model = *preset;
    } else if (option == "--params") o.params = count_value(option, options.take_value());
    else if (option == "--devices") o.devices = count_value(option, options.take_value());
    else if (option == "--batch") o.batch = count_value(option, options.take_value());
    else if (option == "--seq") o.seq = count_value(option, options.take_value());
    else if (option == "--compute-time") o.compute_seconds = seconds_value(option, options.take_value());
    else if (option == "--dtype") o.dtype = dtype_option(options.take_value());
    else if (option == "--json") o.json = (options.take_flag(), true);
    else if (option == "--mfu") {
      const std::string text = options.take_value();
      auto value = number_with_unit(text, {});
      if (!value || *value > 1) throw UsageError{"--mfu: expected a fraction in (0, 1] (got '" + text + "')"};
      o.mfu = *value;
    } else if (option == "--device") {
      const std::string text = options.take_value();
      o.device = find_gpu_by_name(text);
      if (!o.device) throw UsageError{"--device: unknown device '" + text + "' (known: " + gpu_name_list() + ")"};
    } else if (option == "--sharding") {
      const std::string text = options.take_value();
      if (text != "all") {
        o.sharding = parse_sharding(text);
        if (!o.sharding) throw UsageError{"--sharding: unknown '" + text + "' (known: ddp, zero1, zero2, zero3, fsdp, all)"};
      }
    } else if (option == "--busbw") {
      const std::string text = options.take_value();
      if (std::filesystem::is_directory(text)) std::tie(o.busbw, o.busbw_source) = measured_busbw(text);
      else o.busbw = rate_option(text), o.busbw_source = "given";
    } else if (option.empty()) {
      throw UsageError{"unexpected argument '" + options.take_positional() + "'"};
    } else {
      options.unknown();
    }
  }
  if (!o.model && !o.params) throw UsageError{"--busbw needs --model NAME or --params N"};
  if (o.devices < 1) throw UsageError{"--busbw needs --devices N (the data-parallel ranks)"};
  if (!o.compute_seconds && !(o.model && o.batch && o.seq && o.device && o.mfu))
    throw UsageError{"--busbw needs --compute-time T, or --model with --batch, --seq, --device and --mfu"};
  return o;
}

std::string megabytes(std::int64_t bytes) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f MB", double(bytes) / 1e6);
  return buffer;
}

// The stages table: a row per sharding stage, its collectives (in text one phrase, in JSON a
// list), the bytes over each rank's link and the step's times.
Table stages_table(const std::vector<Sharding>& stages, const Options& o, std::int64_t parameters, double compute) {
  Table table = {.columns = {{"sharding", {"sharding"}},
                             {"", {"collectives"}},
                             {"collectives", {}},
                             {"link_bytes", {"bytes per rank's link"}, printf_format("%.1f MB", 1, 1e6)},
                             {"comm_seconds", {"comm ms"}, printf_format("%.4g", 1e3)},
                             {"step_seconds_serial", {"step ms, serial"}, printf_format("%.4g", 1e3)},
                             {"step_seconds_overlapped", {"step ms, overlapped"}, printf_format("%.4g", 1e3)},
                             {"comm_fraction_serial", {"comm share, serial"}, printf_format("%.1f%%", 100)}}};
  for (Sharding stage : stages) {
    const DataParallelStep step = data_parallel_step(parameters, o.dtype, o.dtype, o.devices, stage, o.busbw, compute);
    json collectives = json::array();
    std::string text;
    for (const auto& c : step.collectives) {
      collectives.push_back({{"what", c.what}, {"collective", collective_name(c.collective)}, {"bytes", c.bytes},
                             {"link_bytes", c.link_bytes}, {"seconds", c.seconds}});
      text += (text.empty() ? "" : " + ") + std::string(collective_name(c.collective)) + " of " + c.what;
    }
    table.rows.push_back({std::string(sharding_name(stage)), text.empty() ? "none (1 rank)" : text,
                          Cell::json(std::move(collectives)), step.link_bytes, step.comm_seconds,
                          step.step_seconds_serial, step.step_seconds_overlapped, step.comm_fraction_serial});
  }
  return table;
}

}  // namespace

bool wants_data_parallel(const Args& train_args) {
  for (const auto& arg : train_args)
    if (arg == "--busbw" || arg.starts_with("--busbw=")) return true;
  return false;
}

int cmd_train_data_parallel(const Args& train_args) {
  const Options o = read_options(train_args);
  const std::int64_t parameters = o.params ? *o.params : transformer_parameters(*o.model);
  std::string compute_source = "given";
  double compute = o.compute_seconds.value_or(0);
  if (!o.compute_seconds) {
    const ModelAccount account = transformer_account(*o.model, *o.batch, *o.seq, o.dtype);
    const std::string key(peak_key(natural_compute_mode(o.dtype)));
    const ComputePeak* peak = gpu_peaks(*o.device).find(key);
    if (!peak) throw UsageError{"--device: " + std::string(o.device->name) + " has no " + key + " peak"};
    compute = training_seconds(account.step().pytorch_flops, peak->flops_per_second, 1, *o.mfu);
    char buffer[256];
    std::snprintf(buffer, sizeof buffer, "%s FLOPs of batch %lld x seq %lld on %s at %.0f%% MFU",
                  exact_and_short(account.step().pytorch_flops).c_str(), static_cast<long long>(*o.batch),
                  static_cast<long long>(*o.seq), std::string(o.device->name).c_str(), 100 * *o.mfu);
    compute_source = buffer;
  }
  std::vector<Sharding> stages = {Sharding::ddp, Sharding::zero1, Sharding::zero2, Sharding::zero3};
  if (o.sharding) stages = {*o.sharding};
  const std::string name = o.model ? o.model->name : std::to_string(parameters) + " parameters";
  json out = {{"model", name}, {"parameters", parameters}, {"dtype", dtype_name(o.dtype)}, {"ranks", o.devices},
              {"busbw", o.busbw}, {"busbw_source", o.busbw_source}, {"compute_seconds", compute},
              {"compute_source", compute_source}};
  const Table table = stages_table(stages, o, parameters, compute);
  out["stages"] = table_json(table);
  if (!o.json) {
    std::printf("data-parallel step: %s, %s parameters, %s gradients %s per rank, %lld ranks\n", name.c_str(),
                format_thousands(parameters).c_str(), std::string(dtype_name(o.dtype)).c_str(),
                megabytes(parameters * std::int64_t(dtype_size(o.dtype))).c_str(), static_cast<long long>(o.devices));
    std::printf("  busbw    %.4g GB/s (%s)\n  compute  %.4g ms per step (%s)\n\n", o.busbw / 1e9,
                o.busbw_source.c_str(), compute * 1e3, compute_source.c_str());
    print_markdown(table);
  }
  if (o.json) std::printf("%s\n", dump_exact(out).c_str());
  else
    std::printf("\nring algorithm at busbw (all_reduce moves 2(n-1)/n of the buffer per link, all_gather and\n"
                "reduce_scatter (n-1)/n); overlapped = max(compute, comm): the bound when every collective\n"
                "hides behind the backward pass; activations' and optimizer's time not counted.\n");
  return 0;
}

}  // namespace flopscope::cli
