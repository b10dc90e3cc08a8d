// Storage dtypes of the suite. Dtype is a run-time value (STYLE.md lesson 9): one binary covers
// every dtype. tf32 is not here: it is a compute mode of matmul, not a storage type.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace flopscope {

enum class DType { f64, f32, f16, bf16, f8e4m3, f8e5m2 };

inline constexpr std::array<DType, 6> kAllDTypes = {DType::f64,  DType::f32,    DType::f16,
                                                    DType::bf16, DType::f8e4m3, DType::f8e5m2};

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
