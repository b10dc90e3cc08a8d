// flopscope account train: the arithmetic of a training run (6·N·T and the exact count, wall-clock
// time at an MFU), the largest model whose training state fits a memory, and the MFU of a measured step.

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "account.hpp"
#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/accounting.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/memory.hpp"
#include "flopscope/model.hpp"
#include "flopscope/sizes.hpp"
#include "flopscope/training.hpp"

namespace flopscope::cli {

using nlohmann::json;
namespace {

// ---- train ----

struct TrainOptions {
  std::optional<std::int64_t> params, tokens, seq, batch, memory, devices;
  std::optional<TransformerConfig> model;
  std::optional<double> mfu, step_seconds;
  const GpuSpec* device = nullptr;
  std::optional<double> peak;  // --peak: a device the table does not know (or another rate)
  DType dtype = DType::bf16;
  Optimizer optimizer = Optimizer::adamw;
  bool master_weights = true;
  bool json = false;
};

TrainOptions read_train_options(const Args& args) {
  TrainOptions o;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    const std::string option(name);
    if (name == "--params") o.params = positive_exact_count(option, options.take_value());
    else if (name == "--tokens") o.tokens = positive_exact_count(option, options.take_value());
    else if (name == "--seq") o.seq = positive_count(option, options.take_value());
    else if (name == "--batch") o.batch = positive_count(option, options.take_value());
    else if (name == "--devices") o.devices = positive_exact_count(option, options.take_value());
    else if (name == "--memory") o.memory = memory_option(option, options.take_value());
    else if (name == "--mfu") o.mfu = fraction_option(option, options.take_value());
    else if (name == "--step-time") o.step_seconds = seconds_option(option, options.take_value());
    else if (name == "--model") o.model = preset_option(options.take_value());
    else if (name == "--config") o.model = read_config(options.take_value());
    else if (name == "--hf-config") o.model = read_hf_config(options.take_value());
    else if (name == "--dtype") o.dtype = dtype_option(options.take_value());
    else if (name == "--json") o.json = (options.take_flag(), true);
    else if (name == "--no-master-weights") o.master_weights = (options.take_flag(), false);
    else if (name == "--optimizer") {
      const std::string text = options.take_value();
      auto parsed = parse_optimizer(text);
      if (!parsed) throw UsageError{"--optimizer: unknown '" + text + "' (known: sgd, momentum, adam, adamw)"};
      o.optimizer = *parsed;
    } else if (name == "--device") {
      o.device = &gpu_option(options.take_value());
    } else if (name == "--peak") {
      o.peak = rate_option(option, options.take_value(), "FLOP/s");
    } else if (name.empty()) {
      throw UsageError{"unexpected argument '" + options.take_positional() + "'"};
    } else {
      options.unknown();
    }
  }
  if (!o.tokens && !o.memory && !o.step_seconds)
    throw UsageError{"train needs --tokens T (with --params N or --model), --memory 8x80GB or --step-time 0.35s"};
  return o;
}

bool has_device(const TrainOptions& o) { return o.device || o.peak; }
std::string device_name(const TrainOptions& o) { return o.device ? std::string(o.device->name) : "custom device"; }

// The device's dense peak for the dtype's compute mode (--peak overrides it); UsageError when it
// has none.
double device_peak(const TrainOptions& o, std::string* description) {
  const std::string compute(peak_key(natural_compute_mode(o.dtype)));
  if (o.peak) {
    char buffer[256];
    std::snprintf(buffer, sizeof buffer, "%s, %s peak %.1f TFLOP/s (--peak)", device_name(o).c_str(), compute.c_str(),
                  *o.peak / 1e12);
    *description = buffer;
    return *o.peak;
  }
  const DevicePeaks peaks = gpu_peaks(*o.device);
  const ComputePeak* peak = peaks.find(compute);
  if (!peak) throw UsageError{"--device: " + std::string(o.device->name) + " has no " + compute + " peak"};
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "%s, %s dense peak %.1f TFLOP/s (%s)", std::string(o.device->name).c_str(),
                compute.c_str(), peak->flops_per_second / 1e12, peak->formula.c_str());
  *description = buffer;
  return peak->flops_per_second;
}

// Each section's figures are computed once, here, and rendered twice: as text (print_*) and as
// JSON (*_json), which only format them.

// The device a run or a step is set against (--device or --peak; devices 1 unless --devices).
struct DeviceFigures {
  std::string name, description;  // "H100 SXM"; "H100 SXM, bf16 dense peak 989.4 TFLOP/s (...)"
  double peak = 0;                 // FLOP/s, 0 without a device
  std::int64_t devices = 1;
};

// ---- the run: 6·N·T, the exact count, the wall-clock time at an MFU ----

struct RunFigures {
  std::int64_t parameters = 0, tokens = 0;
  Count128 six_n_t;
  std::optional<RunFlops> exact;  // with --model
  std::string model;
  std::int64_t seq = 0;
  std::optional<double> mfu;
  std::optional<double> seconds, exact_seconds;  // with a device and --mfu
};

RunFigures run_figures(const TrainOptions& o, std::int64_t parameters, std::optional<RunFlops> exact,
                       const DeviceFigures& device) {
  RunFigures f{.parameters = parameters, .tokens = *o.tokens, .six_n_t = six_n_t(parameters, *o.tokens), .exact = exact,
               .model = o.model ? o.model->name : "", .seq = o.seq.value_or(0), .mfu = o.mfu};
  if (device.peak > 0 && o.mfu) {
    f.seconds = training_seconds(f.six_n_t, device.peak, device.devices, *o.mfu);
    if (exact) f.exact_seconds = training_seconds(exact->pytorch_flops, device.peak, device.devices, *o.mfu);
  }
  return f;
}

json run_json(const RunFigures& f, const DeviceFigures& device) {
  json out = {{"parameters", f.parameters}, {"tokens", f.tokens}, {"six_n_t", json_count(f.six_n_t)}};
  if (f.exact)
    out["exact"] = {{"model", f.model}, {"seq", f.seq}, {"pytorch_flops", json_count(f.exact->pytorch_flops)},
                    {"flops", json_count(f.exact->flops)}, {"rounded", f.exact->rounded}};
  if (f.seconds) {
    out["device"] = {{"name", device.name}, {"peak_flops_per_second", device.peak}, {"devices", device.devices},
                     {"mfu", *f.mfu}};
    out["seconds"] = *f.seconds;
    out["days"] = *f.seconds / 86400;
    if (f.exact_seconds) out["exact"]["days"] = *f.exact_seconds / 86400;
  }
  return out;
}

void print_run(const RunFigures& f, const DeviceFigures& device) {
  std::printf("run: %s parameters x %s tokens\n", format_thousands(f.parameters).c_str(),
              format_thousands(f.tokens).c_str());
  std::printf("  FLOPs 6·N·T            %s\n", exact_and_short(f.six_n_t).c_str());
  if (f.exact) {
    std::printf("  FLOPs exact, pytorch   %s  (%s at seq %s: with the attention term%s)\n",
                exact_and_short(f.exact->pytorch_flops).c_str(), f.model.c_str(), format_thousands(f.seq).c_str(),
                f.exact->rounded ? "; tokens / seq rounded down" : "");
    std::printf("  FLOPs exact, full      %s\n", exact_and_short(f.exact->flops).c_str());
  }
  if (f.seconds) {
    std::printf("  device                 %s\n", device.description.c_str());
    std::printf("                         x %s devices at %.1f%% MFU\n", format_thousands(device.devices).c_str(),
                100 * *f.mfu);
    std::printf("  wall-clock (6·N·T)     %.4g s = %.1f days\n", *f.seconds, *f.seconds / 86400);
    if (f.exact_seconds)
      std::printf("  wall-clock (exact)     %.4g s = %.1f days\n", *f.exact_seconds, *f.exact_seconds / 86400);
  } else if (device.peak > 0) {  // a device without --mfu
    std::printf("  (add --mfu 0.4, the fraction of the %s peak that the run sustains (0.3 to 0.5 is usual for "
                "large models), for the wall-clock time)\n", device.name.c_str());
  } else {
    std::printf("  (add --device h100 (or --peak FLOP/s) and --mfu 0.4 [--devices N] for the wall-clock time)\n");
  }
}

// ---- the memory: the largest model whose training state fits ----

json largest_json(const LargestModel& largest, std::int64_t memory) {
  json components = json::array();
  for (const auto& c : largest.memory.components)
    components.push_back({{"name", c.name}, {"dtype", dtype_name(c.dtype)}, {"bytes_per_parameter", c.bytes_per_parameter}});
  return {{"memory_bytes", memory}, {"bytes_per_parameter", largest.bytes_per_parameter},
          {"components", components}, {"largest_parameters", largest.parameters},
          {"state_bytes", largest.memory.total_bytes}};
}

void print_largest(const TrainOptions& o, const LargestModel& largest) {
  std::printf("memory: %s\n", format_bytes_both(*o.memory).c_str());
  std::printf("training state per parameter (%s parameters, %s%s): %lld B =", std::string(dtype_name(o.dtype)).c_str(),
              std::string(optimizer_name(o.optimizer)).c_str(),
              dtype_size(o.dtype) < 4 ? (o.master_weights ? ", f32 master weights" : ", no master weights") : "",
              static_cast<long long>(largest.bytes_per_parameter));
  for (std::size_t i = 0; i < largest.memory.components.size(); ++i) {
    const auto& c = largest.memory.components[i];
    std::printf("%s %s %lld", i ? " +" : "", c.name.c_str(), static_cast<long long>(c.bytes_per_parameter));
  }
  std::printf("\nlargest model whose training state fits: %s parameters\n",
              exact_and_short(largest.parameters).c_str());
  std::printf("its training state: %s\n", format_bytes_both(largest.memory.total_bytes).c_str());
  std::printf("(activations, temporary buffers and allocator fragmentation are not counted: a real run fits fewer)\n");
}

// ---- a measured step: its MFU by three counts ----

struct StepFigures {
  std::string model;
  std::int64_t batch = 0, seq = 0, tokens = 0;
  double seconds = 0;
  FlopTotals step;
  Count128 six_n_t;
  double mfu = 0, mfu_full = 0, mfu_six_n_t = 0, tokens_per_second = 0;
};

StepFigures step_figures(const ModelAccount& model, double seconds, const DeviceFigures& device) {
  StepFigures f{.model = model.config.name, .batch = model.batch, .seq = model.seq, .tokens = model.tokens(),
                .seconds = seconds, .step = model.step(), .six_n_t = six_n_t(model.parameters, model.tokens())};
  f.mfu = model_flops_utilization(f.step.pytorch_flops, seconds, device.peak, device.devices);
  f.mfu_full = model_flops_utilization(f.step.flops, seconds, device.peak, device.devices);
  f.mfu_six_n_t = model_flops_utilization(f.six_n_t, seconds, device.peak, device.devices);
  f.tokens_per_second = static_cast<double>(f.tokens) / seconds;
  return f;
}

json mfu_json(const StepFigures& f, const DeviceFigures& device) {
  return {{"model", f.model}, {"batch", f.batch}, {"seq", f.seq}, {"step_seconds", f.seconds},
          {"devices", device.devices}, {"peak_flops_per_second", device.peak},
          {"step_pytorch_flops", json_count(f.step.pytorch_flops)}, {"step_flops", json_count(f.step.flops)},
          {"six_n_t", json_count(f.six_n_t)}, {"mfu", f.mfu}, {"mfu_full", f.mfu_full}, {"mfu_six_n_t", f.mfu_six_n_t},
          {"tokens_per_second", f.tokens_per_second}};
}

void print_mfu(const StepFigures& f, const DeviceFigures& device) {
  std::printf("step: %s, batch %s x seq %s = %s tokens in %.6g s on %s device%s\n", f.model.c_str(),
              format_thousands(f.batch).c_str(), format_thousands(f.seq).c_str(), format_thousands(f.tokens).c_str(),
              f.seconds, format_thousands(device.devices).c_str(), device.devices == 1 ? "" : "s");
  std::printf("  device        %s\n", device.description.c_str());
  std::printf("  MFU           %.2f%%  (step FLOPs, pytorch convention: %s)\n", 100 * f.mfu,
              exact_and_short(f.step.pytorch_flops).c_str());
  std::printf("  full count    %.2f%%  (%s)\n", 100 * f.mfu_full, exact_and_short(f.step.flops).c_str());
  std::printf("  6·N·T         %.2f%%  (%s)\n", 100 * f.mfu_six_n_t, exact_and_short(f.six_n_t).c_str());
  std::printf("  throughput    %.1f tokens/s\n", f.tokens_per_second);
}

int cmd_train(const Args& args) {
  TrainOptions o = read_train_options(args);
  DeviceFigures device{.name = device_name(o), .devices = o.devices.value_or(1)};
  if (has_device(o)) device.peak = device_peak(o, &device.description);
  json out = json::object();
  bool printed = false;
  auto separate = [&] {
    if (printed && !o.json) std::printf("\n");
    printed = true;
  };
  if (o.tokens) {
    if (!o.params && !o.model) throw UsageError{"--tokens needs --params N or --model NAME / --config FILE"};
    if (o.mfu && !has_device(o))
      throw UsageError{"--mfu needs --device (known: " + gpu_name_list() + ") or --peak FLOP/s"};
    std::optional<RunFlops> exact;
    if (o.model) {
      if (!o.seq) o.seq = o.model->context;
      try {
        exact = run_flops(*o.model, *o.tokens, *o.seq);
      } catch (const SizeOverflow& error) {  // say which inputs made the count too large
        throw UsageError{"--tokens " + std::to_string(*o.tokens) + " of " + o.model->name + " at --seq " +
                         std::to_string(*o.seq) + ": " + error.what()};
      }
    }
    // 6·N·T counts the parameters a token uses: a MoE model's active ones.
    const std::int64_t parameters =
        o.params ? *o.params : transformer_account(*o.model, 1, 1, DType::f32).active_parameters;
    separate();
    const RunFigures figures = run_figures(o, parameters, exact, device);
    if (o.json) out["run"] = run_json(figures, device);
    else print_run(figures, device);
  }
  // Data-parallel communication per step (account_comm.cpp, the collectives workstream) is
  // reported here, between the run's FLOPs and its memory.
  if (o.memory) {
    const LargestModel largest = largest_trainable_model(*o.memory, o.dtype, o.optimizer, o.master_weights);
    separate();
    if (o.json) out["memory"] = largest_json(largest, *o.memory);
    else print_largest(o, largest);
  }
  if (o.step_seconds) {
    if (!o.model || !o.batch || !o.seq || !has_device(o))
      throw UsageError{"--step-time needs --model (or --config), --batch, --seq and --device"};
    const ModelAccount model = transformer_account(*o.model, *o.batch, *o.seq, o.dtype);
    separate();
    const StepFigures figures = step_figures(model, *o.step_seconds, device);
    if (o.json) out["step"] = mfu_json(figures, device);
    else print_mfu(figures, device);
  }
  if (o.json) std::printf("%s\n", dump_exact(out).c_str());
  return 0;
}

}  // namespace

int account_train(const Args& args) { return cmd_train(args); }

}  // namespace flopscope::cli
