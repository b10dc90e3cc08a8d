// Storage dtypes of the suite. Dtype is a run-time value (STYLE.md lesson 9): one binary covers
// every dtype. tf32 is not here: it is a compute mode of matmul, not a storage type.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace flopscope {

enum class DType { f64, f32, f16, bf16, f8e4m3, f8e5m2 };

inline constexpr std::array<DType, 6> kAllDTypes = {DType::f64,  DType::f32,    DType::f16,
                                                    DType::bf16, DType::f8e4m3, DType::f8e5m2};

// Note [one dtype table]: every fact of a storage dtype is in one row of kDTypeRows, read by
// numerics (float_layout: the bit layout, and from it range, epsilon, digits; at compile time
// fast::FormatOf, the fast paths' and the conversion kernels' formats), compute modes
// (natural_compute_mode), tensors (significand bits of random values) and `flopscope dtypes`.
struct DTypeRow {
  DType dtype;
  std::string_view name;             // "f8e4m3": in case names and on the command line
  std::size_t size;                  // bytes per element
  int exponent_bits, mantissa_bits;  // the stored fields (the implicit leading bit not counted)
  bool has_inf;                      // IEEE specials (all-ones exponent: inf, NaN); false: OCP E4M3FN (NaN only)
  std::string_view natural_compute;  // the compute mode it computes in when nothing else is asked
  std::string_view aliases;          // other names, space-separated: PyTorch's, ml_dtypes', short ones
};
inline constexpr std::array<DTypeRow, 6> kDTypeRows = {{
    {DType::f64, "f64", 8, 11, 52, true, "f64", "float64 fp64 double"},
    {DType::f32, "f32", 4, 8, 23, true, "f32", "float32 fp32 float"},
    {DType::f16, "f16", 2, 5, 10, true, "f16", "float16 fp16 half"},
    {DType::bf16, "bf16", 2, 8, 7, true, "bf16", "bfloat16"},
    {DType::f8e4m3, "f8e4m3", 1, 4, 3, false, "f8e4m3", "float8_e4m3fn e4m3fn e4m3 fp8e4m3"},
    {DType::f8e5m2, "f8e5m2", 1, 5, 2, true, "f8e5m2", "float8_e5m2 e5m2 fp8e5m2"},
}};
std::span<const DTypeRow> dtype_rows();
// Constant where the dtype is (fast::FormatOf<D>, the conversion kernels' storage types).
constexpr const DTypeRow& dtype_row(DType dtype) {
  for (const DTypeRow& row : kDTypeRows)
    if (row.dtype == dtype) return row;
  return kDTypeRows[0];  // unreachable: every DType has its row (dtype.cpp checks)
}

// Short name used in benchmark names and on the command line: "f32", "bf16", "f8e4m3", ...
std::string_view dtype_name(DType dtype);
// Inverse of dtype_name; also accepts common aliases (float32, fp16, half, bfloat16, e4m3, ...)
// and PyTorch's and ml_dtypes' names (float8_e4m3fn, float8_e5m2; "torch." prefix allowed).
std::optional<DType> parse_dtype(std::string_view text);
// "fp8", "f8", "float8" (any case): a name that could be either fp8 format.
bool is_ambiguous_fp8(std::string_view text);
// "f64, f32, f16, bf16, f8e4m3, f8e5m2": for error messages.
std::string dtype_list();
// Bytes per element.
std::size_t dtype_size(DType dtype);

}  // namespace flopscope
