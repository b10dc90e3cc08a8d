#include "flopscope/training.hpp"

#include <cctype>
#include <stdexcept>

namespace flopscope {

Count128 six_n_t(std::int64_t parameters, std::int64_t tokens) {
  if (parameters < 0 || tokens < 0)
    throw std::invalid_argument("6·N·T: negative " + std::string(parameters < 0 ? "parameters " : "tokens ") +
                                std::to_string(parameters < 0 ? parameters : tokens));
  return checked_mul<Count128>(checked_mul<Count128>(6, parameters, "6·N·T"), tokens, "6·N·T");
}

RunFlops run_flops(const TransformerConfig& config, std::int64_t tokens, std::int64_t seq) {
  if (tokens < 0) throw std::invalid_argument("tokens must not be negative (got " + std::to_string(tokens) + ")");
  const FlopTotals step = transformer_account(config, 1, seq, DType::bf16).step();
  // step x tokens / seq, exact: the product first (128 bits hold it), then one division.
  const Count128 pytorch = checked_mul<Count128>(step.pytorch_flops, tokens, "run FLOPs");
  const Count128 full = checked_mul<Count128>(step.flops, tokens, "run FLOPs");
  return {pytorch / seq, full / seq, tokens % seq != 0};
}

namespace {

std::string lowercase_key(std::string_view name) {
  std::string key;
  for (char c : name) key += c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

}  // namespace

const GpuSpec* find_gpu_by_name(std::string_view name) {
  const std::string wanted = lowercase_key(name);
  if (wanted.empty()) return nullptr;
  const GpuSpec* prefix_match = nullptr;
  for (const auto& spec : gpu_spec_table()) {
    const std::string key = lowercase_key(spec.name);
    if (key == wanted) return &spec;
    if (!key.starts_with(wanted)) continue;
    const bool sxm = key.find("sxm") != std::string::npos;
    if (!prefix_match || (sxm && lowercase_key(prefix_match->name).find("sxm") == std::string::npos))
      prefix_match = &spec;
  }
  return prefix_match;
}

std::string gpu_name_list() {
  std::string out;
  for (const auto& spec : gpu_spec_table()) out += (out.empty() ? "" : ", ") + lowercase_key(spec.name);
  return out;
}

double gpu_peak_flops(const GpuSpec& gpu, std::string_view compute) {
  const DevicePeaks peaks = gpu_peaks(gpu);
  const ComputePeak* peak = peaks.find(compute);
  return peak ? peak->flops_per_second : 0;
}

double training_seconds(Count128 flops, double peak_flops_per_second, std::int64_t devices, double mfu) {
  if (!(peak_flops_per_second > 0)) throw std::invalid_argument("the peak must be positive");
  if (devices <= 0) throw std::invalid_argument("devices must be positive (got " + std::to_string(devices) + ")");
  if (!(mfu > 0 && mfu <= 1)) throw std::invalid_argument("MFU must be in (0, 1] (got " + std::to_string(mfu) + ")");
  return static_cast<double>(flops) / (static_cast<double>(devices) * peak_flops_per_second * mfu);
}

double model_flops_utilization(Count128 step_flops, double step_seconds, double peak_flops_per_second,
                               std::int64_t devices) {
  if (!(step_seconds > 0)) throw std::invalid_argument("the step time must be positive");
  if (!(peak_flops_per_second > 0)) throw std::invalid_argument("the peak must be positive");
  if (devices <= 0) throw std::invalid_argument("devices must be positive (got " + std::to_string(devices) + ")");
  return static_cast<double>(step_flops) / (step_seconds * static_cast<double>(devices) * peak_flops_per_second);
}

LargestModel largest_trainable_model(std::int64_t memory_bytes, DType parameter_dtype, Optimizer optimizer,
                                     bool master_weights) {
  if (memory_bytes < 0)
    throw std::invalid_argument("memory must not be negative (got " + std::to_string(memory_bytes) + ")");
  // The bytes per parameter of the state (memory.hpp), then the largest whole count that fits.
  const auto one = training_memory(1, parameter_dtype, optimizer, master_weights);
  const std::int64_t per_parameter = one.bytes_per_parameter;
  LargestModel largest{.parameters = memory_bytes / per_parameter, .bytes_per_parameter = per_parameter, .memory = {}};
  largest.memory = training_memory(largest.parameters, parameter_dtype, optimizer, master_weights);
  return largest;
}

}  // namespace flopscope
