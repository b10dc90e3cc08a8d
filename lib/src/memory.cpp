#include "flopscope/memory.hpp"

#include <array>
#include <cmath>
#include <cstdio>

#include "flopscope/sizes.hpp"

namespace flopscope {

std::optional<std::vector<std::int64_t>> parse_shape(std::string_view text) {
  std::vector<std::int64_t> shape;
  if (text.empty()) return shape;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = text.find_first_of("x,", start);
    const std::string_view piece = text.substr(start, x == std::string_view::npos ? x : x - start);
    auto dim = parse_count(piece);
    if (!dim) return std::nullopt;
    shape.push_back(*dim);
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  return shape;
}

std::string format_shape(std::span<const std::int64_t> shape) {
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

std::int64_t tensor_bytes(std::span<const std::int64_t> shape, DType dtype) {
  return checked_bytes(checked_numel(shape), dtype_size(dtype), "bytes of " + std::string(dtype_name(dtype)) + " elements");
}

std::optional<Optimizer> parse_optimizer(std::string_view text) {
  if (text == "sgd") return Optimizer::sgd;
  if (text == "momentum" || text == "sgd-momentum" || text == "sgd_momentum") return Optimizer::sgd_momentum;
  if (text == "adam" || text == "adamw") return Optimizer::adamw;
  return std::nullopt;
}

std::string_view optimizer_name(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::sgd: return "sgd";
    case Optimizer::sgd_momentum: return "sgd-momentum";
    case Optimizer::adamw: return "adamw";
  }
  return "?";
}

TrainingMemory training_memory(std::int64_t parameters, DType parameter_dtype, Optimizer optimizer, bool master_weights) {
  TrainingMemory memory;
  auto add = [&](std::string name, DType dtype) {
    const auto size = static_cast<std::int64_t>(dtype_size(dtype));
    memory.components.push_back({std::move(name), dtype, size, 0});
  };
  add("parameters", parameter_dtype);
  add("gradients", parameter_dtype);
  const bool narrow = dtype_size(parameter_dtype) < dtype_size(DType::f32);
  if (narrow && master_weights) add("f32 master weights", DType::f32);
  switch (optimizer) {
    case Optimizer::sgd: break;
    case Optimizer::sgd_momentum: add("momentum buffer", DType::f32); break;
    case Optimizer::adamw:
      add("adamw exp_avg (1st moment)", DType::f32);
      add("adamw exp_avg_sq (2nd moment)", DType::f32);
      break;
  }
  for (auto& component : memory.components) {
    component.bytes = checked_bytes(parameters, static_cast<std::size_t>(component.bytes_per_parameter),
                                    "bytes of " + component.name);
    memory.total_bytes = checked_add(memory.total_bytes, component.bytes, "bytes of the training state");
    memory.bytes_per_parameter += component.bytes_per_parameter;
  }
  return memory;
}

std::string format_bytes_both(std::int64_t bytes) {
  const auto value = static_cast<double>(bytes);
  return format_thousands(bytes) + " B (" + format_bytes_binary(value) + ", " + format_bytes_decimal(value) + ")";
}

}  // namespace flopscope
