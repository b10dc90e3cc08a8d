#include "flopscope/memory.hpp"

#include <array>
#include <cmath>
#include <cstdio>

#include "flopscope/sizes.hpp"

namespace flopscope {

namespace {

std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace

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

std::optional<std::int64_t> element_count(std::span<const std::int64_t> shape) {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) {
    auto next = checked_mul(count, dim);
    if (!next || dim < 0) return std::nullopt;
    count = *next;
  }
  return count;
}

std::optional<std::int64_t> tensor_bytes(std::span<const std::int64_t> shape, DType dtype) {
  auto count = element_count(shape);
  if (!count) return std::nullopt;
  return checked_mul(*count, static_cast<std::int64_t>(dtype_size(dtype)));
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

std::optional<TrainingMemory> training_memory(std::int64_t parameters, DType parameter_dtype,
                                              Optimizer optimizer, bool master_weights) {
  if (parameters < 0) return std::nullopt;
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
    auto bytes = checked_mul(parameters, component.bytes_per_parameter);
    if (!bytes || __builtin_add_overflow(memory.total_bytes, *bytes, &memory.total_bytes))
      return std::nullopt;
    component.bytes = *bytes;
    memory.bytes_per_parameter += component.bytes_per_parameter;
  }
  return memory;
}

std::string format_bytes_both(std::int64_t bytes) {
  const auto value = static_cast<double>(bytes);
  return format_thousands(bytes) + " B (" + format_bytes_binary(value) + ", " + format_bytes_decimal(value) + ")";
}

}  // namespace flopscope
