// Bit-exact encoding and decoding of every storage dtype (see dtype.hpp), the dtypes' properties
// computed from their bit layout, and fast inline f32 <-> narrow conversions for kernels.
// Bit patterns are returned in the low bits of a uint64 (8 bits for fp8, 16 for f16/bf16, ...).
//
// Note [NaN encoding]: every conversion produces one canonical quiet NaN per dtype, keeping the
// input's sign: f64 0x7ff8.., f32 0x7fc00000, f16 0x7e00, bf16 0x7fc0, f8e5m2 0x7e, f8e4m3 0x7f
// (the only NaN of E4M3FN, S.1111.111). Payloads are dropped, so that every implementation (this
// reference, the CPU instructions, the CUDA intrinsics) agrees bit for bit on NaN inputs too;
// kernels whose instructions keep payloads canonicalize afterwards. (f64 -> f64 is the identity.)
//
// Note [saturation]: without `saturate` a value whose rounded result lies beyond the largest
// finite value becomes +/-inf (f32, f16, bf16, f8e5m2) or NaN (f8e4m3, which has no infinity), as
// PyTorch and ml_dtypes do. With `saturate` it becomes +/- the largest finite value, infinities
// included, as CUDA's __NV_SATFINITE does. NaN stays NaN in both modes.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string_view>

#include "flopscope/compute_mode.hpp"  // compute modes (tf32, mixed fp8 pairs): not storage types
#include "flopscope/dtype.hpp"

namespace flopscope {

// Round-to-nearest-even from a double, with correct subnormals, signed zeros and NaN kept a NaN.
// Rounds once from the double (never through f32). Overflow: see Note [saturation].
std::uint64_t encode_bits(DType dtype, double value, bool saturate = false);

// Exact: every pattern of every dtype is representable in double.
double decode_bits(DType dtype, std::uint64_t bits);

// ---- layout and properties ---------------------------------------------------------------------

// The bit layout: 1 sign bit, exponent_bits, mantissa_bits (the stored fraction, without the
// implicit leading 1). IEEE-like formats reserve the all-ones exponent for inf and NaN; the "FN"
// (finite, NaN) format E4M3FN has no infinity and one NaN per sign (all exponent and mantissa
// bits set).
struct FloatLayout {
  int exponent_bits;
  int mantissa_bits;
  bool ieee_specials;  // true: all-ones exponent = inf / NaN; false: E4M3FN
  int bits() const { return 1 + exponent_bits + mantissa_bits; }
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
};

FloatLayout float_layout(DType dtype);

// Properties derived from the layout (decoding the extreme patterns), never typed in.
struct DTypeInfo {
  DType dtype;
  int bits, bytes, exponent_bits, mantissa_bits, exponent_bias;
  bool has_inf, has_nan;
  double largest_finite;
  double smallest_normal;
  double smallest_subnormal;
  double epsilon;            // distance from 1 to the next larger value: 2^-mantissa_bits
  int decimal_digits;        // digits that always survive a decimal round trip: floor((p-1) log10 2)
  double significant_digits; // p log10 2, p = mantissa_bits + 1
  std::uint64_t max_finite_bits, canonical_nan_bits, inf_bits;  // inf_bits 0 without infinity
};

DTypeInfo dtype_info(DType dtype);


// ---- what a value becomes ----------------------------------------------------------------------

enum class ConversionFlag { exact, rounded, underflow_to_zero, overflow_to_inf, overflow_to_nan, saturated, nan };

// "exact", "rounded", "underflow to zero", "overflow to inf", "overflow to NaN", "saturated", "NaN".
std::string_view conversion_flag_name(ConversionFlag flag);

struct Conversion {
  std::uint64_t bits;
  double value;  // decode_bits(dtype, bits)
  ConversionFlag flag;
};

// encode_bits + decode_bits + what happened. "saturated" means the value would have overflowed
// without `saturate`; "rounded" includes rounding to a subnormal; "NaN" means the input was NaN.
Conversion convert_value(DType dtype, double value, bool saturate = false);

// ---- fast inline f32 paths (used by the kernels) -----------------------------------------------
// Note [fast f32 paths]: these are a second, independent implementation of the same rounding for
// f32 inputs (integer rounding for normal results, one f32 addition of a power of two for
// subnormal results, which rounds to nearest even in the default floating-point environment; they
// need DAZ/FTZ off). The tests check them against encode_bits on every f32 input class.

namespace fast {

template <int E, int M, bool Ieee>
struct Format {
  static constexpr int exponent_bits = E, mantissa_bits = M;
  static constexpr std::uint32_t bias = (1u << (E - 1)) - 1;
  static constexpr std::uint32_t sign_bit = 1u << (E + M);
  static constexpr std::uint32_t abs_mask = sign_bit - 1;
  static constexpr std::uint32_t inf = Ieee ? ((1u << E) - 1) << M : 0;
  static constexpr std::uint32_t max_finite = Ieee ? inf - 1 : abs_mask - 1;
  static constexpr std::uint32_t nan = Ieee ? inf | (1u << (M - 1)) : abs_mask;
  static constexpr std::uint32_t overflow = Ieee ? inf : nan;
  static constexpr bool ieee = Ieee;
  // f32 bit pattern of the smallest normal value 2^(1-bias).
  static constexpr std::uint32_t f32_min_normal = (128u - bias) << 23;
  // 2^(1 - bias - M + 23): adding it to |x| < smallest normal rounds |x| to a multiple of the
  // smallest subnormal 2^(1-bias-M), leaving that multiple in the low bits.
  static constexpr std::uint32_t f32_subnormal_magic = (128u - bias - M + 23) << 23;
  // The normal-range rounding bias in f32 bits: rebias the exponent, add half an ulp minus one.
  static constexpr std::uint32_t f32_rebias = (bias - 127u) << 23;  // wraps: modular arithmetic
  static constexpr std::uint32_t f32_half_ulp_minus_one = (1u << (22 - M)) - 1;
  // Decoding: added to a normal code shifted into f32 position, rebiases its exponent.
  static constexpr std::uint32_t f32_decode_rebias = (127u - bias) << 23;
  // The smallest subnormal 2^(1 - bias - M) as f32 bits (a normal f32 unless bias == 127).
  static constexpr std::uint32_t f32_smallest_subnormal = 
      bias == 127 ? 1u << (23 - M) : (128u - bias - M) << 23;
};

// A narrow dtype's format, from its row of the dtype table (Note [one dtype table]).
template <DType D>
using FormatOf = Format<dtype_row(D).exponent_bits, dtype_row(D).mantissa_bits, dtype_row(D).has_inf>;

using F16 = FormatOf<DType::f16>;
using BF16 = FormatOf<DType::bf16>;
using E4M3 = FormatOf<DType::f8e4m3>;
using E5M2 = FormatOf<DType::f8e5m2>;

template <class F>
constexpr std::uint32_t encode_f32(float x, bool saturate) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 31) << (F::exponent_bits + F::mantissa_bits);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | F::nan;
  std::uint32_t r;
  if (a < F::f32_min_normal) {
    const float magic = std::bit_cast<float>(F::f32_subnormal_magic);
    r = std::bit_cast<std::uint32_t>(std::bit_cast<float>(a) + magic) - F::f32_subnormal_magic;
  } else {
    const std::uint32_t odd = (a >> (23 - F::mantissa_bits)) & 1u;
    r = (a + F::f32_rebias + F::f32_half_ulp_minus_one + odd) >> (23 - F::mantissa_bits);
  }
  if (r > F::max_finite) r = saturate ? F::max_finite : F::overflow;
  return sign | r;
}

template <class F>
constexpr float decode_f32(std::uint32_t h) {
  const std::uint32_t sign = (h & F::sign_bit) << (31 - F::exponent_bits - F::mantissa_bits);
  const std::uint32_t a = h & F::abs_mask;
  if constexpr (F::ieee) {
    if (a == F::inf) return std::bit_cast<float>(sign | 0x7f800000u);
    if (a > F::inf) return std::bit_cast<float>(sign | 0x7fc00000u);
  } else {
    if (a == F::abs_mask) return std::bit_cast<float>(sign | 0x7fc00000u);
  }
  // No arithmetic on f32 subnormals (slow on x86: microcode assists): normal codes are rebiased
  // as integers; subnormal codes are their mantissa times the smallest subnormal, a normal f32
  // for every format but bf16, whose subnormals are f32 subnormals with the same bits.
  if constexpr (F::bias == 127) {
    return std::bit_cast<float>((a << 16) | sign);
  } else {
    if (a >> F::mantissa_bits == 0) {
      const float magnitude = static_cast<float>(a) * std::bit_cast<float>(F::f32_smallest_subnormal);
      return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
    }
    return std::bit_cast<float>(((a << (23 - F::mantissa_bits)) + F::f32_decode_rebias) | sign);
  }
}

// f32 -> f32 with the canonical NaN (Note [NaN encoding]); with `saturate`, inf -> max finite.
constexpr std::uint32_t canonical_f32(float x, bool saturate = false) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (u & 0x80000000u) | 0x7fc00000u;
  if (a == 0x7f800000u && saturate) return (u & 0x80000000u) | 0x7f7fffffu;
  return u;
}

}  // namespace fast

// Narrow dtype (f16, bf16, f8e4m3, f8e5m2) from f32 and back, through the fast paths. Other
// dtypes: f32 -> f32 canonicalizes NaN; f64 is not narrow (use encode_bits).
constexpr std::uint32_t encode_f32(DType dtype, float x, bool saturate = false) {
  switch (dtype) {
    case DType::f16: return fast::encode_f32<fast::F16>(x, saturate);
    case DType::bf16: return fast::encode_f32<fast::BF16>(x, saturate);
    case DType::f8e4m3: return fast::encode_f32<fast::E4M3>(x, saturate);
    case DType::f8e5m2: return fast::encode_f32<fast::E5M2>(x, saturate);
    default: return fast::canonical_f32(x, saturate);
  }
}

constexpr float decode_f32(DType dtype, std::uint32_t bits) {
  switch (dtype) {
    case DType::f16: return fast::decode_f32<fast::F16>(bits);
    case DType::bf16: return fast::decode_f32<fast::BF16>(bits);
    case DType::f8e4m3: return fast::decode_f32<fast::E4M3>(bits);
    case DType::f8e5m2: return fast::decode_f32<fast::E5M2>(bits);
    default: return std::bit_cast<float>(fast::canonical_f32(std::bit_cast<float>(bits)));
  }
}

}  // namespace flopscope
