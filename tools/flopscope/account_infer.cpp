// flopscope account infer: the serving arithmetic of a transformer (inference.hpp): its KV cache,
// prefill and decode FLOPs and bytes, and the roofline bound on tokens/s of one device per batch.
//   flopscope account infer --model llama-3-8b --device h100 --batch 1,64 [--prompt 1024]
//       [--context 1024] [--dtype bf16] [--kv-dtype bf16] [--peak 989T --bandwidth 3.35TB/s] [--json]

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "account.hpp"
#include "cli_numbers.hpp"
#include "table.hpp"
#include "commands.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/inference.hpp"
#include "flopscope/sizes.hpp"
#include "flopscope/training.hpp"

namespace flopscope::cli {

using nlohmann::json;
namespace {

struct InferOptions {
  std::optional<TransformerConfig> model;
  std::vector<std::int64_t> batches;
  std::optional<std::int64_t> prompt, context;
  DType weight_dtype = DType::bf16;
  std::optional<DType> kv_dtype;
  const GpuSpec* device = nullptr;
  std::optional<double> peak, bandwidth;
  bool json = false;
};

std::vector<std::int64_t> batch_list(const std::string& option, const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(positive_exact_count(option, text.substr(start, comma - start)));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

InferOptions read_options(const Args& args) {
  InferOptions o;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    const std::string option(name);
    if (name == "--model") o.model = preset_option(options.take_value());
    else if (name == "--config") o.model = read_config(options.take_value());
    else if (name == "--hf-config") o.model = read_hf_config(options.take_value());
    else if (name == "--batch") o.batches = batch_list(option, options.take_value());
    else if (name == "--prompt") o.prompt = positive_exact_count(option, options.take_value());
    else if (name == "--context") o.context = positive_exact_count(option, options.take_value());
    else if (name == "--dtype") o.weight_dtype = dtype_option(options.take_value());
    else if (name == "--kv-dtype") o.kv_dtype = dtype_option(options.take_value());
    else if (name == "--peak") o.peak = rate_option(option, options.take_value(), "FLOP/s");
    else if (name == "--bandwidth") o.bandwidth = rate_option(option, options.take_value(), "B/s");
    else if (name == "--json") o.json = (options.take_flag(), true);
    else if (name == "--device") o.device = &gpu_option(options.take_value());
    else if (name.empty()) throw UsageError{"unexpected argument '" + options.take_positional() + "'"};
    else options.unknown();
  }
  if (!o.model) throw UsageError{"needs --model NAME, --config FILE.json or --hf-config PATH (presets: " +
                                 preset_list() + ")"};
  if (o.batches.empty()) o.batches = {1};
  if (!o.prompt) o.prompt = std::min<std::int64_t>(1024, o.model->context);
  if (!o.context) o.context = *o.prompt;
  for (const auto& [option, value] : {std::pair{"--prompt", *o.prompt}, {"--context", *o.context}})
    if (value > o.model->context)
      throw UsageError{std::string(option) + " " + std::to_string(value) + " exceeds " + o.model->name +
                       "'s context " + std::to_string(o.model->context)};
  return o;
}

struct Device {
  std::string name, description;
  Roofline roofline;
};

// The device's rates: the peaks table's row for --device, each overridden by --peak / --bandwidth.
std::optional<Device> device_option(const InferOptions& o) {
  if (!o.device && !o.peak && !o.bandwidth) return std::nullopt;
  const std::string compute(peak_key(natural_compute_mode(o.weight_dtype)));
  Device device{.name = o.device ? std::string(o.device->name) : "custom device"};
  std::string peak_source = "--peak", bandwidth_source = "--bandwidth";
  if (o.device) {
    device.roofline = {gpu_peak_flops(*o.device, compute), o.device->memory_gbytes_per_second * 1e9};
    peak_source = bandwidth_source = std::string(o.device->source);
  }
  if (o.peak) device.roofline.flops_per_second = *o.peak, peak_source = "--peak";
  if (o.bandwidth) device.roofline.bytes_per_second = *o.bandwidth, bandwidth_source = "--bandwidth";
  if (!(device.roofline.flops_per_second > 0))
    throw UsageError{o.device ? "--device: " + device.name + " has no " + compute + " peak (give --peak FLOP/s)"
                              : "--bandwidth needs --peak FLOP/s too (or --device NAME)"};
  if (!(device.roofline.bytes_per_second > 0)) throw UsageError{"--peak needs --bandwidth B/s too (or --device NAME)"};
  char text[512];
  if (peak_source == bandwidth_source)
    std::snprintf(text, sizeof text, "%s: %s dense %.1f TFLOP/s, memory %.2f TB/s (%s)", device.name.c_str(),
                  compute.c_str(), device.roofline.flops_per_second / 1e12, device.roofline.bytes_per_second / 1e12,
                  peak_source.c_str());
  else
    std::snprintf(text, sizeof text, "%s: %s dense %.1f TFLOP/s (%s), memory %.2f TB/s (%s)", device.name.c_str(),
                  compute.c_str(), device.roofline.flops_per_second / 1e12, peak_source.c_str(),
                  device.roofline.bytes_per_second / 1e12, bandwidth_source.c_str());
  device.description = text;
  return device;
}

// The steps table: a row per batch and step (prefill, then decode); the times, the bound and the
// tokens/s where there is a device.
Table steps_table(const std::vector<std::pair<StepBound, StepBound>>& steps, bool with_time) {
  Table table = {.columns = {{"batch", {"batch"}},
                             {"", {"step"}},
                             {"tokens", {}},
                             {"pytorch_flops", {"FLOPs (pytorch)"}, kExactAndShort},
                             {"flops", {}},
                             {"weight_bytes", {"weight bytes"}, kThousands},
                             {"kv_bytes", {"KV bytes"}, kThousands},
                             {"bytes", {}},
                             {"intensity", {"FLOP/byte"}, printf_format("%.1f")}}};
  if (with_time)
    table.columns.insert(table.columns.end(), {{"compute_seconds", {"compute ms"}, printf_format("%.3f", 1e3)},
                                               {"memory_seconds", {"memory ms"}, printf_format("%.3f", 1e3)},
                                               {"seconds", {}},
                                               {"bound", {"bound"}},
                                               {"tokens_per_second", {"tokens/s"}, printf_format("%.0f")}});
  auto add = [&](const StepBound& s, const char* step) {
    Row row = {s.batch, step, s.tokens, s.flops.pytorch_flops, s.flops.flops, s.weight_bytes, s.kv_bytes,
               s.flops.bytes, s.intensity};
    if (with_time)
      row.insert(row.end(), {s.compute_seconds, s.memory_seconds, s.seconds(), s.memory_bound() ? "memory" : "compute",
                             s.tokens_per_second()});
    table.rows.push_back(std::move(row));
  };
  for (const auto& [prefill, decode] : steps) {
    add(prefill, "prefill");
    add(decode, "decode");
  }
  return table;
}

}  // namespace

int account_infer(const Args& args) {
  const InferOptions o = read_options(args);
  const TransformerConfig& c = *o.model;
  const DType kv_dtype = o.kv_dtype.value_or(o.weight_dtype);
  const std::optional<Device> device = device_option(o);
  const Roofline roofline = device ? device->roofline : Roofline{1, 1};  // unused without a device
  const std::int64_t kv_token = kv_cache_bytes_per_token(c, kv_dtype);
  const FlopTotals prefill = transformer_account(c, 1, *o.prompt, DType::bf16).forward;
  const FlopTotals decode = decode_token_flops(c, *o.context);
  const std::int64_t parameters = transformer_parameters(c);

  std::vector<std::pair<StepBound, StepBound>> steps;  // prefill, decode per batch
  for (std::int64_t batch : o.batches)
    steps.emplace_back(prefill_step(c, batch, *o.prompt, o.weight_dtype, kv_dtype, roofline),
                       decode_step(c, batch, *o.context, o.weight_dtype, kv_dtype, roofline));
  // -1: no device; 0: no batch makes decode compute-bound.
  std::int64_t crossover = -1;
  if (device) crossover = decode_crossover_batch(c, *o.context, o.weight_dtype, kv_dtype, roofline).value_or(0);

  json out = {{"model", config_json(c)},
              {"parameters", parameters},
              {"weight_dtype", dtype_name(o.weight_dtype)},
              {"kv_dtype", dtype_name(kv_dtype)},
              {"prompt", *o.prompt},
              {"context", *o.context},
              {"kv_cache", {{"bytes_per_token", kv_token},
                            {"bytes_per_sequence", json_count(Count128{kv_token} * *o.context)},
                            {"bytes_per_full_context", json_count(Count128{kv_token} * c.context)}}},
              {"prefill", {{"tokens", *o.prompt}, {"pytorch_flops", json_count(prefill.pytorch_flops)},
                           {"flops", json_count(prefill.flops)}}},
              {"decode_token", {{"context", *o.context}, {"pytorch_flops", json_count(decode.pytorch_flops)},
                                {"flops", json_count(decode.flops)}}},
              {"steps", json::array()}};
  const Table table = steps_table(steps, device.has_value());
  const json rows = table_json(table);  // prefill, decode per batch
  for (std::size_t i = 0; i < steps.size(); ++i)
    out["steps"].push_back({{"batch", steps[i].first.batch}, {"prefill", rows[2 * i]}, {"decode", rows[2 * i + 1]}});
  if (device) {
    out["device"] = {{"name", device->name},
                     {"peak_flops_per_second", device->roofline.flops_per_second},
                     {"bytes_per_second", device->roofline.bytes_per_second},
                     {"ridge_intensity", device->roofline.flops_per_second / device->roofline.bytes_per_second}};
    out["decode_crossover_batch"] = crossover > 0 ? json(crossover) : json(nullptr);
  }
  if (o.json) {
    std::printf("%s\n", dump_exact(out).c_str());
    return 0;
  }

  const std::string kv_name(dtype_name(kv_dtype));
  std::printf("%s: %s parameters, weights in %s, KV cache in %s\n", c.name.c_str(),
              format_thousands(parameters).c_str(), std::string(dtype_name(o.weight_dtype)).c_str(), kv_name.c_str());
  std::printf("KV cache       %s bytes per token (2 x %lld layers x %lld kv heads x %lld head_dim x %zu bytes)\n",
              format_thousands(kv_token).c_str(), static_cast<long long>(c.layers),
              static_cast<long long>(c.key_value_heads()), static_cast<long long>(c.head_size()),
              dtype_size(kv_dtype));
  std::printf("               %s per sequence of %s tokens; %s at the full context of %s\n",
              format_bytes_both(kv_token * *o.context).c_str(), format_thousands(*o.context).c_str(),
              format_bytes_both(kv_token * c.context).c_str(), format_thousands(c.context).c_str());
  std::printf("prefill        a prompt of %s tokens: pytorch %s FLOPs, full %s\n",
              format_thousands(*o.prompt).c_str(), exact_and_short(prefill.pytorch_flops).c_str(),
              exact_and_short(prefill.flops).c_str());
  std::printf("decode         a token at %s keys: pytorch %s FLOPs, full %s\n", format_thousands(*o.context).c_str(),
              exact_and_short(decode.pytorch_flops).c_str(), exact_and_short(decode.flops).c_str());
  if (device) {
    std::printf("device         %s\n", device->description.c_str());
    std::printf("               ridge point %.1f FLOP/byte\n",
                device->roofline.flops_per_second / device->roofline.bytes_per_second);
  }
  std::printf("\n");
  print_text(table);
  std::printf("(prefill: batch prompts of %s tokens, tokens/s counts prompt tokens; decode: one token per "
              "sequence at %s keys, the weights read once per step, each sequence's KV read)\n",
              format_thousands(*o.prompt).c_str(), format_thousands(*o.context).c_str());
  if (device) {
    if (crossover > 0)
      std::printf("crossover      decode at %s keys is compute-bound from batch %s\n",
                  format_thousands(*o.context).c_str(), format_thousands(crossover).c_str());
    else
      std::printf("crossover      none: at %s keys each sequence's KV read outlasts its FLOPs; decode stays "
                  "memory-bound at any batch\n",
                  format_thousands(*o.context).c_str());
  } else {
    std::printf("(add --device h100, or --peak FLOP/s --bandwidth B/s, for the roofline bound on tokens/s)\n");
  }
  return 0;
}

}  // namespace flopscope::cli
