#include "flopscope/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace flopscope {

namespace {

constexpr std::array<DTypeRow, 6> kRows = {{
    {DType::f64, "f64", 8, 11, 52, true, "f64", "float64 fp64 double"},
    {DType::f32, "f32", 4, 8, 23, true, "f32", "float32 fp32 float"},
    {DType::f16, "f16", 2, 5, 10, true, "f16", "float16 fp16 half"},
    {DType::bf16, "bf16", 2, 8, 7, true, "bf16", "bfloat16"},
    {DType::f8e4m3, "f8e4m3", 1, 4, 3, false, "f8e4m3", "float8_e4m3fn e4m3fn e4m3 fp8e4m3"},
    {DType::f8e5m2, "f8e5m2", 1, 5, 2, true, "f8e5m2", "float8_e5m2 e5m2 fp8e5m2"},
}};

const DTypeRow& row(DType dtype) {
  return *std::find_if(kRows.begin(), kRows.end(), [&](const DTypeRow& r) { return r.dtype == dtype; });
}

}  // namespace

std::span<const DTypeRow> dtype_rows() { return kRows; }

const DTypeRow& dtype_row(DType dtype) { return row(dtype); }

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
  for (const auto& r : kRows) {
    if (r.name == lower) return r.dtype;
    for (std::string_view rest = r.aliases; !rest.empty();) {
      const std::size_t space = std::min(rest.find(' '), rest.size());
      if (rest.substr(0, space) == lower) return r.dtype;
      rest.remove_prefix(std::min(space + 1, rest.size()));
    }
  }
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
