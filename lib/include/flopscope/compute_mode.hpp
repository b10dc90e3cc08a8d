// Compute modes: the arithmetic a kernel does, as distinct from the dtypes it stores. tf32 is f32
// storage multiplied with a 10-bit mantissa; an fp8 GEMM takes two fp8 operands (the same format
// or e5m2 with e4m3) and accumulates in f32. This is the one vocabulary for "what math runs" in
// lib/, the kernels, the bench names and labels (compute=...), and the peak tables (whose keys
// are peak_key(): every fp8 mode shares the "f8" tensor-core rate).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "flopscope/dtype.hpp"

namespace flopscope {

enum class ComputeMode { f64, f32, tf32, f16, bf16, f8e4m3, f8e5m2, f8e4m3_e5m2, f8e5m2_e4m3 };

struct ComputeModeInfo {
  ComputeMode mode;
  std::string_view name;      // "tf32", "f8e5m2_e4m3": in case names and on the command line
  std::string_view storage;   // the operands' storage dtypes: "f32", "f8e5m2,f8e4m3"
  DType a, b;                 // operand storage (a x b for a matmul)
  DType accumulate;           // what products are summed in
  std::string_view peak_key;  // the DevicePeaks / ceilings entry whose rate applies
  std::string_view description;
  // The multiplier's inputs are a's dtype (the dtype table's fields: Note [one dtype table]),
  // rounded to fewer mantissa bits where this is above 0 (tf32: f32 operands, 10 bits).
  int rounded_mantissa_bits = 0;

  // The multiplier's inputs' fields (a's, for a mixed pair): tf32 8, 10; bf16 8, 7.
  int exponent_bits() const { return dtype_row(a).exponent_bits; }
  int mantissa_bits() const { return rounded_mantissa_bits > 0 ? rounded_mantissa_bits : dtype_row(a).mantissa_bits; }
};

std::span<const ComputeModeInfo> compute_modes();
const ComputeModeInfo& compute_mode_info(ComputeMode mode);
std::string_view compute_mode_name(ComputeMode mode);
// A mode's name, or a storage dtype's name or alias (bf16 -> bf16, fp32 -> f32); nullopt otherwise.
std::optional<ComputeMode> parse_compute_mode(std::string_view text);
// "f64, f32, tf32, ...": for error messages.
std::string compute_mode_list();
// The mode a storage dtype computes in when nothing else is asked (f32 -> f32, f8e4m3 -> f8e4m3).
ComputeMode natural_compute_mode(DType dtype);
// The peak key of the math a dtype's elementwise work or FMA chain runs in ("f8" for fp8).
std::string_view peak_key(ComputeMode mode);

}  // namespace flopscope
