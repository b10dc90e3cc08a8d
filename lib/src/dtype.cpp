#include "flopscope/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace flopscope {

namespace {

struct DTypeRow {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeRow, 6> kRows = {{
    {DType::f64, "f64", 8},
    {DType::f32, "f32", 4},
    {DType::f16, "f16", 2},
    {DType::bf16, "bf16", 2},
    {DType::f8e4m3, "f8e4m3", 1},
    {DType::f8e5m2, "f8e5m2", 1},
}};

constexpr std::array<std::pair<std::string_view, DType>, 17> kAliases = {{
    {"float64", DType::f64}, {"fp64", DType::f64},      {"double", DType::f64},
    {"float32", DType::f32}, {"fp32", DType::f32},      {"float", DType::f32},
    {"float16", DType::f16}, {"fp16", DType::f16},      {"half", DType::f16},
    {"bfloat16", DType::bf16}, {"e4m3", DType::f8e4m3}, {"fp8e4m3", DType::f8e4m3},
    {"e5m2", DType::f8e5m2}, {"fp8e5m2", DType::f8e5m2},
    {"float8_e4m3fn", DType::f8e4m3}, {"e4m3fn", DType::f8e4m3}, {"float8_e5m2", DType::f8e5m2},
}};

const DTypeRow& row(DType dtype) {
  return *std::find_if(kRows.begin(), kRows.end(), [&](const DTypeRow& r) { return r.dtype == dtype; });
}

}  // namespace

std::string_view dtype_name(DType dtype) { return row(dtype).name; }

std::size_t dtype_size(DType dtype) { return row(dtype).size; }

namespace {

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

}  // namespace

bool is_ambiguous_fp8(std::string_view text) {
  const std::string lower = lowercase(text);
  return lower == "fp8" || lower == "f8" || lower == "float8" || lower == "torch.float8";
}

std::optional<DType> parse_dtype(std::string_view text) {
  std::string lower = lowercase(text);
  if (lower.starts_with("torch.")) lower.erase(0, 6);
  for (const auto& r : kRows)
    if (r.name == lower) return r.dtype;
  for (const auto& [alias, dtype] : kAliases)
    if (alias == lower) return dtype;
  return std::nullopt;
}

std::string dtype_list() {
  std::string out;
  for (const auto& r : kRows) {
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

}  // namespace flopscope
