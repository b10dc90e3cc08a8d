// The reference encoder and decoder: integer arithmetic on the double's fields, one rounding,
// written for clarity rather than speed (the fast f32 paths in numerics.hpp are separate code).
#include "flopscope/numerics.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace flopscope {

namespace {

constexpr std::uint64_t kF64SignBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kF64Inf = 0x7ff0000000000000ull;

struct Patterns {
  std::uint64_t sign_bit, abs_mask, max_finite, inf, nan;
};

Patterns patterns(const FloatLayout& layout) {
  const int e = layout.exponent_bits, m = layout.mantissa_bits;
  Patterns p{};
  p.sign_bit = std::uint64_t{1} << (e + m);
  p.abs_mask = p.sign_bit - 1;
  if (layout.ieee_specials) {
    p.inf = ((std::uint64_t{1} << e) - 1) << m;
    p.max_finite = p.inf - 1;
    p.nan = p.inf | (std::uint64_t{1} << (m - 1));
  } else {
    p.inf = 0;
    p.max_finite = p.abs_mask - 1;
    p.nan = p.abs_mask;
  }
  return p;
}

// Round-to-nearest-even of sig / 2^shift.
std::uint64_t round_shift(std::uint64_t sig, int shift) {
  if (shift <= 0) return sig << -shift;
  if (shift >= 64) return 0;  // sig < 2^53 is below half of 2^64
  const std::uint64_t q = sig >> shift;
  const std::uint64_t rem = sig & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
}

std::uint64_t encode_layout(const FloatLayout& layout, double value, bool saturate) {
  const Patterns p = patterns(layout);
  const std::uint64_t u = std::bit_cast<std::uint64_t>(value);
  const std::uint64_t sign = (u & kF64SignBit) ? p.sign_bit : 0;
  const std::uint64_t a = u & ~kF64SignBit;
  const std::uint64_t overflow = saturate ? p.max_finite : (layout.ieee_specials ? p.inf : p.nan);
  if (a > kF64Inf) return sign | p.nan;
  if (a == kF64Inf) return sign | overflow;
  if (a == 0) return sign;

  // value = sig * 2^exponent exactly, with the leading bit of sig at position msb.
  const int biased = static_cast<int>(a >> 52);
  const std::uint64_t fraction = a & ((std::uint64_t{1} << 52) - 1);
  const std::uint64_t sig = biased == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
  const int exponent = biased == 0 ? -1074 : biased - 1075;
  const int msb = 63 - std::countl_zero(sig);
  const int unbiased = exponent + msb;  // value in [2^unbiased, 2^(unbiased+1))

  const int m = layout.mantissa_bits;
  const int target_biased = unbiased + layout.bias();
  // The quantum (value of one unit in the last place) of the result: that of its binade for
  // normal results, that of the subnormals (2^(1-bias-m)) below the smallest normal.
  const int quantum = target_biased >= 1 ? unbiased - m : 1 - layout.bias() - m;
  const std::uint64_t q = round_shift(sig, quantum - exponent);
  std::uint64_t bits;
  if (target_biased >= 1) {
    // q in [2^m, 2^(m+1)]; a carry to 2^(m+1) moves into the next binade by itself.
    bits = (static_cast<std::uint64_t>(target_biased) << m) + (q - (std::uint64_t{1} << m));
  } else {
    bits = q;  // q <= 2^m; q == 2^m is the smallest normal
  }
  if (bits > p.max_finite) bits = overflow;
  return sign | bits;
}

double decode_layout(const FloatLayout& layout, std::uint64_t bits) {
  const Patterns p = patterns(layout);
  const bool negative = (bits & p.sign_bit) != 0;
  const std::uint64_t a = bits & p.abs_mask;
  const int m = layout.mantissa_bits;
  const std::uint64_t exponent_field = a >> m;
  const std::uint64_t mantissa = a & ((std::uint64_t{1} << m) - 1);
  double magnitude;
  if (layout.ieee_specials && exponent_field == (std::uint64_t{1} << layout.exponent_bits) - 1) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (!layout.ieee_specials && a == p.abs_mask) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent_field == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - layout.bias() - m);
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa | (std::uint64_t{1} << m)),
                           static_cast<int>(exponent_field) - layout.bias() - m);
  }
  return negative ? -magnitude : magnitude;
}


}  // namespace

FloatLayout float_layout(DType dtype) {
  const DTypeRow& row = dtype_row(dtype);  // Note [one dtype table]
  return {row.exponent_bits, row.mantissa_bits, row.has_inf};
}

std::uint64_t encode_bits(DType dtype, double value, bool saturate) {
  if (dtype == DType::f64) {
    const std::uint64_t u = std::bit_cast<std::uint64_t>(value);
    if (saturate && (u & ~kF64SignBit) == kF64Inf)
      return (u & kF64SignBit) | 0x7fefffffffffffffull;
    return u;
  }
  return encode_layout(float_layout(dtype), value, saturate);
}

double decode_bits(DType dtype, std::uint64_t bits) {
  if (dtype == DType::f64) return std::bit_cast<double>(bits);
  return decode_layout(float_layout(dtype), bits);
}

DTypeInfo dtype_info(DType dtype) {
  const FloatLayout layout = float_layout(dtype);
  const Patterns p = patterns(layout);
  DTypeInfo info{};
  info.dtype = dtype;
  info.bits = layout.bits();
  info.bytes = (info.bits + 7) / 8;
  info.exponent_bits = layout.exponent_bits;
  info.mantissa_bits = layout.mantissa_bits;
  info.exponent_bias = layout.bias();
  info.has_inf = layout.ieee_specials;
  info.has_nan = true;
  info.max_finite_bits = p.max_finite;
  info.canonical_nan_bits = p.nan;
  info.inf_bits = p.inf;
  info.largest_finite = decode_bits(dtype, p.max_finite);
  info.smallest_normal = decode_bits(dtype, std::uint64_t{1} << layout.mantissa_bits);
  info.smallest_subnormal = decode_bits(dtype, 1);
  const std::uint64_t one = static_cast<std::uint64_t>(layout.bias()) << layout.mantissa_bits;
  info.epsilon = decode_bits(dtype, one + 1) - decode_bits(dtype, one);
  const int precision = layout.mantissa_bits + 1;
  info.significant_digits = precision * std::log10(2.0);
  info.decimal_digits = static_cast<int>(std::floor((precision - 1) * std::log10(2.0)));
  return info;
}

std::string_view conversion_flag_name(ConversionFlag flag) {
  switch (flag) {
    case ConversionFlag::exact: return "exact";
    case ConversionFlag::rounded: return "rounded";
    case ConversionFlag::underflow_to_zero: return "underflow to zero";
    case ConversionFlag::overflow_to_inf: return "overflow to inf";
    case ConversionFlag::overflow_to_nan: return "overflow to NaN";
    case ConversionFlag::saturated: return "saturated";
    case ConversionFlag::nan: return "NaN";
  }
  return "?";
}

Conversion convert_value(DType dtype, double value, bool saturate) {
  Conversion out{};
  out.bits = encode_bits(dtype, value, saturate);
  out.value = decode_bits(dtype, out.bits);
  if (std::isnan(value)) {
    out.flag = ConversionFlag::nan;
    return out;
  }
  const double unsaturated = saturate ? decode_bits(dtype, encode_bits(dtype, value, false)) : out.value;
  // NaN != NaN: an overflow to NaN that saturation turned finite counts as saturated too.
  if (saturate && !(out.value == unsaturated))
    out.flag = ConversionFlag::saturated;
  else if (std::isnan(out.value))
    out.flag = ConversionFlag::overflow_to_nan;
  else if (std::isinf(out.value) && !std::isinf(value))
    out.flag = ConversionFlag::overflow_to_inf;
  else if (out.value == value)
    out.flag = ConversionFlag::exact;
  else if (out.value == 0)
    out.flag = ConversionFlag::underflow_to_zero;
  else
    out.flag = ConversionFlag::rounded;
  return out;
}

}  // namespace flopscope
