// Dtype encoding and decoding against independent computations: a decoder written from the
// formats' definitions, a brute-force nearest-value oracle, and the CPU's own conversion
// instructions (F16C for f16, AVX512_BF16 for bf16) where present.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "flopscope/numerics.hpp"

namespace flopscope {
namespace {

constexpr std::array<DType, 4> kNarrow = {DType::f16, DType::bf16, DType::f8e4m3, DType::f8e5m2};

// The formats as their specifications state them, written out here rather than taken from
// numerics.cpp: exponent bits, mantissa bits, whether the all-ones exponent means inf/NaN.
struct Spec {
  DType dtype;
  int e, m;
  bool ieee;
  std::uint32_t canonical_nan;
};
constexpr std::array<Spec, 4> kSpecs = {{
    {DType::f16, 5, 10, true, 0x7e00},
    {DType::bf16, 8, 7, true, 0x7fc0},
    {DType::f8e4m3, 4, 3, false, 0x7f},
    {DType::f8e5m2, 5, 2, true, 0x7e},
}};

std::uint32_t pattern_count(const Spec& s) { return 1u << (1 + s.e + s.m); }

// Independent decoder: sign, biased exponent and fraction, then ldexp.
double spec_decode(const Spec& s, std::uint32_t bits) {
  const bool negative = (bits >> (s.e + s.m)) & 1;
  const std::uint32_t exponent = (bits >> s.m) & ((1u << s.e) - 1);
  const std::uint32_t fraction = bits & ((1u << s.m) - 1);
  const int bias = (1 << (s.e - 1)) - 1;
  double value;
  if (s.ieee && exponent == (1u << s.e) - 1)
    value = fraction ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (!s.ieee && exponent == (1u << s.e) - 1 && fraction == (1u << s.m) - 1)
    value = std::numeric_limits<double>::quiet_NaN();
  else if (exponent == 0)
    value = std::ldexp(fraction, 1 - bias - s.m);
  else
    value = std::ldexp(fraction + (1u << s.m), int(exponent) - bias - s.m);
  return negative ? -value : value;
}

bool is_nan_pattern(const Spec& s, std::uint32_t bits) { return std::isnan(spec_decode(s, bits)); }
std::uint32_t sign_bit(const Spec& s) { return 1u << (s.e + s.m); }

// The largest finite positive pattern: the values of patterns 0..max increase with the pattern.
std::uint32_t max_finite(const Spec& s) {
  std::uint32_t b = sign_bit(s) - 1;
  while (!std::isfinite(spec_decode(s, b))) --b;
  return b;
}

// Brute-force oracle: the nearest representable value to x, ties to the even pattern, with the
// overflow rule: beyond max finite, compare against a virtual next value max + ulp(max).
std::uint32_t oracle_encode(const Spec& s, double x, bool saturate) {
  const std::uint32_t sign = std::signbit(x) ? sign_bit(s) : 0;
  if (std::isnan(x)) return sign | s.canonical_nan;
  const std::uint32_t max = max_finite(s);
  const std::uint32_t overflow = saturate ? max : (s.ieee ? max + 1 : s.canonical_nan);
  const double a = std::fabs(x);
  const double max_value = spec_decode(s, max);
  const double virtual_next = max_value + (max_value - spec_decode(s, max - 1));
  if (std::isinf(a)) return sign | overflow;
  // Binary search for the last pattern with value <= a.
  std::uint32_t lo = 0, hi = max + 1;  // value(lo) <= a, value(hi) > a (hi = max+1 is virtual)
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    (spec_decode(s, mid) <= a ? lo : hi) = mid;
  }
  const double below = spec_decode(s, lo);
  const double above = hi == max + 1 ? virtual_next : spec_decode(s, hi);
  const double d_below = a - below, d_above = above - a;
  std::uint32_t pick;
  if (d_below < d_above) pick = lo;
  else if (d_above < d_below) pick = hi;
  else pick = (lo & 1) == 0 ? lo : hi;
  if (pick > max) pick = overflow;
  return sign | pick;
}

std::uint32_t f32_bits(float x) { return std::bit_cast<std::uint32_t>(x); }

TEST(Numerics, DecodesEveryPattern) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(std::string(dtype_name(s.dtype)));
    for (std::uint32_t b = 0; b < pattern_count(s); ++b) {
      const double expected = spec_decode(s, b);
      const double got = decode_bits(s.dtype, b);
      const float fast = decode_f32(s.dtype, b);
      if (std::isnan(expected)) {
        ASSERT_TRUE(std::isnan(got)) << std::hex << b;
        ASSERT_EQ(std::signbit(got), bool(b & sign_bit(s))) << std::hex << b;
        ASSERT_EQ(f32_bits(fast), (b & sign_bit(s) ? 0xffc00000u : 0x7fc00000u)) << std::hex << b;
      } else {
        ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(expected)) << std::hex << b;
        ASSERT_EQ(f32_bits(fast), f32_bits(static_cast<float>(expected))) << std::hex << b;
      }
    }
  }
}

TEST(Numerics, ReencodesEveryPatternToItself) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(std::string(dtype_name(s.dtype)));
    const std::uint32_t max = max_finite(s);
    for (std::uint32_t b = 0; b < pattern_count(s); ++b) {
      const double value = decode_bits(s.dtype, b);
      const std::uint32_t sign = b & sign_bit(s);
      for (bool saturate : {false, true}) {
        std::uint32_t expected = b;
        if (is_nan_pattern(s, b)) expected = sign | s.canonical_nan;
        else if (std::isinf(value) && saturate) expected = sign | max;
        ASSERT_EQ(encode_bits(s.dtype, value, saturate), expected) << std::hex << b << " saturate " << saturate;
        ASSERT_EQ(encode_f32(s.dtype, static_cast<float>(value), saturate), expected) << std::hex << b;
      }
    }
  }
}

// Every value halfway between two neighbours (ties to the even pattern), and just either side
// of it; and just either side of every value, which covers both sides of every binade boundary
// and the whole subnormal range.
TEST(Numerics, HalfwayCasesAndNeighbours) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(std::string(dtype_name(s.dtype)));
    const std::uint32_t max = max_finite(s);
    for (std::uint32_t b = 0; b <= max; ++b) {
      for (std::uint32_t sign : {0u, sign_bit(s)}) {
        const double lo = spec_decode(s, sign | b);
        const double hi = b < max ? spec_decode(s, sign | (b + 1)) : lo + (lo - spec_decode(s, sign | (b - 1)));
        const double mid = (lo + hi) / 2;  // exact: both have few significant bits
        for (bool saturate : {false, true}) {
          const std::uint32_t overflow = saturate ? max : (s.ieee ? max + 1 : s.canonical_nan);
          const std::uint32_t up = b < max ? b + 1 : overflow;
          const std::uint32_t tie = (b & 1) == 0 ? b : up;
          const double toward_lo = std::nextafter(mid, lo), toward_hi = std::nextafter(mid, hi);
          ASSERT_EQ(encode_bits(s.dtype, mid, saturate), sign | tie) << std::hex << b << " mid " << mid;
          ASSERT_EQ(encode_bits(s.dtype, toward_lo, saturate), sign | b) << std::hex << b;
          ASSERT_EQ(encode_bits(s.dtype, toward_hi, saturate), sign | up) << std::hex << b;
          // The same in f32 (mid is exact in f32 for all four formats).
          const float mid32 = static_cast<float>(mid);
          ASSERT_EQ(double(mid32), mid);
          ASSERT_EQ(encode_f32(s.dtype, mid32, saturate), sign | tie) << std::hex << b;
          ASSERT_EQ(encode_f32(s.dtype, std::nextafter(mid32, float(lo)), saturate), sign | b) << std::hex << b;
          ASSERT_EQ(encode_f32(s.dtype, std::nextafter(mid32, float(hi)), saturate), sign | up) << std::hex << b;
          // Either side of the value itself.
          if (b != 0) {
            ASSERT_EQ(encode_bits(s.dtype, std::nextafter(lo, 0.0), saturate), sign | b) << std::hex << b;
            ASSERT_EQ(encode_f32(s.dtype, std::nextafter(float(lo), 0.0f), saturate), sign | b) << std::hex << b;
          }
          ASSERT_EQ(encode_bits(s.dtype, std::nextafter(lo, 2 * lo + (sign ? -1.0 : 1.0)), saturate), sign | b);
          ASSERT_EQ(encode_f32(s.dtype, std::nextafter(float(lo), float(2 * lo + (sign ? -1.0 : 1.0))), saturate),
                    sign | b);
        }
      }
    }
  }
}

TEST(Numerics, SubnormalsAndSignedZeros) {
  // f16: smallest subnormal 2^-24. Half of it ties to even (0); a hair more rounds up.
  EXPECT_EQ(encode_bits(DType::f16, std::ldexp(1.0, -25)), 0x0000u);
  EXPECT_EQ(encode_bits(DType::f16, std::nextafter(std::ldexp(1.0, -25), 1.0)), 0x0001u);
  EXPECT_EQ(encode_bits(DType::f16, 3 * std::ldexp(1.0, -25)), 0x0002u);  // 1.5 ulp -> 2
  EXPECT_EQ(encode_bits(DType::f16, -std::ldexp(1.0, -26)), 0x8000u);      // -0
  EXPECT_EQ(encode_bits(DType::f16, -0.0), 0x8000u);
  EXPECT_EQ(encode_bits(DType::bf16, 1e-39), 0x000bu);  // an f32 subnormal is a bf16 subnormal
  EXPECT_EQ(encode_f32(DType::bf16, 1e-39f), 0x000bu);
  EXPECT_EQ(encode_bits(DType::f8e4m3, std::ldexp(1.0, -9)), 0x01u);  // smallest subnormal
  EXPECT_EQ(encode_bits(DType::f8e4m3, std::ldexp(1.0, -10)), 0x00u);
  EXPECT_EQ(encode_bits(DType::f8e5m2, -std::ldexp(1.0, -16)), 0x81u);
  EXPECT_EQ(encode_bits(DType::f32, std::ldexp(1.0, -150)), 0u);  // half of 2^-149 ties to 0
  EXPECT_EQ(encode_bits(DType::f32, std::ldexp(3.0, -150)), 2u);
}

TEST(Numerics, OverflowBothModes) {
  struct Case {
    DType dtype;
    double value;
    std::uint64_t plain, saturated;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {DType::f16, 65504, 0x7bff, 0x7bff},   {DType::f16, 65519.99, 0x7bff, 0x7bff},
      {DType::f16, 65520, 0x7c00, 0x7bff},   {DType::f16, -1e6, 0xfc00, 0xfbff},
      {DType::f16, inf, 0x7c00, 0x7bff},     {DType::f16, 70000, 0x7c00, 0x7bff},
      {DType::bf16, 3.4e38, 0x7f80, 0x7f7f}, {DType::bf16, 3.3e38, 0x7f78, 0x7f78},
      {DType::bf16, 1e300, 0x7f80, 0x7f7f},  {DType::f8e4m3, 448, 0x7e, 0x7e},
      {DType::f8e4m3, 464, 0x7e, 0x7e},      {DType::f8e4m3, 464.001, 0x7f, 0x7e},
      {DType::f8e4m3, 500, 0x7f, 0x7e},      {DType::f8e4m3, -inf, 0xff, 0xfe},
      {DType::f8e5m2, 57344, 0x7b, 0x7b},    {DType::f8e5m2, 61439, 0x7b, 0x7b},
      {DType::f8e5m2, 61440, 0x7c, 0x7b},    {DType::f8e5m2, -inf, 0xfc, 0xfb},
      {DType::f32, 1e39, 0x7f800000, 0x7f7fffff},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(encode_bits(c.dtype, c.value, false), c.plain) << dtype_name(c.dtype) << " " << c.value;
    EXPECT_EQ(encode_bits(c.dtype, c.value, true), c.saturated) << dtype_name(c.dtype) << " " << c.value;
  }
}

TEST(Numerics, NaNStaysNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Spec& s : kSpecs)
    for (bool saturate : {false, true}) {
      EXPECT_EQ(encode_bits(s.dtype, nan, saturate), s.canonical_nan);
      EXPECT_EQ(encode_bits(s.dtype, -nan, saturate), s.canonical_nan | sign_bit(s));
      EXPECT_EQ(encode_f32(s.dtype, std::bit_cast<float>(0x7f800001u), saturate), s.canonical_nan);  // SNaN
    }
  EXPECT_TRUE(std::isnan(decode_bits(DType::f8e4m3, 0x7f)));
  EXPECT_EQ(decode_bits(DType::f8e4m3, 0x7e), 448.0);  // S.1111.110 is a number in E4M3FN
  EXPECT_TRUE(std::isinf(decode_bits(DType::f8e5m2, 0x7c)));
}

TEST(Numerics, DoubleInputsRoundOnce) {
  // 1 + 2^-11 is the f16 tie between 1 and 1 + 2^-10. A double just above it must round up;
  // going through f32 first would land on the tie and round to even (1.0).
  const double x = 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(encode_f32(DType::f16, static_cast<float>(x)), 0x3c00u);
  EXPECT_EQ(encode_bits(DType::f16, x), 0x3c01u);
  EXPECT_EQ(encode_bits(DType::f8e4m3, 1 + std::ldexp(1.0, -4) + std::ldexp(1.0, -40)), 0x39u);
}

TEST(Numerics, LectureFacts) {
  EXPECT_EQ(decode_bits(DType::f16, encode_bits(DType::f16, 1e-8)), 0.0);
  const double in_bf16 = decode_bits(DType::bf16, encode_bits(DType::bf16, 1e-8));
  EXPECT_NEAR(in_bf16, 1e-8, 1e-8 * 0x1p-8);
  EXPECT_EQ(convert_value(DType::f16, 1e-8).flag, ConversionFlag::underflow_to_zero);
  EXPECT_EQ(convert_value(DType::bf16, 1e-8).flag, ConversionFlag::rounded);
}

TEST(Numerics, ConversionFlags) {
  EXPECT_EQ(convert_value(DType::f16, 65504).flag, ConversionFlag::exact);
  EXPECT_EQ(convert_value(DType::f16, 70000).flag, ConversionFlag::overflow_to_inf);
  EXPECT_EQ(convert_value(DType::f16, 70000, true).flag, ConversionFlag::saturated);
  EXPECT_EQ(convert_value(DType::f16, 70000, true).value, 65504);
  EXPECT_EQ(convert_value(DType::f8e4m3, 448).flag, ConversionFlag::exact);
  EXPECT_EQ(convert_value(DType::f8e4m3, 500).flag, ConversionFlag::overflow_to_nan);
  EXPECT_EQ(convert_value(DType::f8e4m3, 500, true).flag, ConversionFlag::saturated);
  EXPECT_EQ(convert_value(DType::f8e4m3, 450, true).flag, ConversionFlag::rounded);  // 450 -> 448 anyway
  EXPECT_EQ(convert_value(DType::f8e5m2, 500).flag, ConversionFlag::rounded);
  EXPECT_EQ(convert_value(DType::f8e5m2, INFINITY).flag, ConversionFlag::exact);
  EXPECT_EQ(convert_value(DType::f8e4m3, INFINITY).flag, ConversionFlag::overflow_to_nan);
  EXPECT_EQ(convert_value(DType::f8e4m3, INFINITY, true).flag, ConversionFlag::saturated);
  EXPECT_EQ(convert_value(DType::f16, NAN).flag, ConversionFlag::nan);
  EXPECT_EQ(convert_value(DType::f32, 0.1).flag, ConversionFlag::rounded);
  EXPECT_EQ(convert_value(DType::f64, 0.1).flag, ConversionFlag::exact);
  EXPECT_EQ(conversion_flag_name(ConversionFlag::overflow_to_nan), "overflow to NaN");
}

TEST(Numerics, PropertiesFromLayout) {
  const DTypeInfo f16 = dtype_info(DType::f16);
  EXPECT_EQ(f16.bytes, 2);
  EXPECT_EQ(f16.largest_finite, 65504);
  EXPECT_EQ(f16.smallest_normal, 0x1p-14);
  EXPECT_EQ(f16.smallest_subnormal, 0x1p-24);
  EXPECT_EQ(f16.epsilon, 0x1p-10);
  EXPECT_EQ(f16.decimal_digits, 3);
  const DTypeInfo bf16 = dtype_info(DType::bf16);
  EXPECT_EQ(bf16.largest_finite, 0x1.fep127);
  EXPECT_EQ(bf16.smallest_normal, 0x1p-126);
  EXPECT_EQ(bf16.smallest_subnormal, 0x1p-133);
  EXPECT_EQ(bf16.epsilon, 0x1p-7);
  const DTypeInfo e4m3 = dtype_info(DType::f8e4m3);
  EXPECT_EQ(e4m3.largest_finite, 448);
  EXPECT_EQ(e4m3.smallest_normal, 0x1p-6);
  EXPECT_EQ(e4m3.smallest_subnormal, 0x1p-9);
  EXPECT_EQ(e4m3.epsilon, 0.125);
  EXPECT_FALSE(e4m3.has_inf);
  EXPECT_TRUE(e4m3.has_nan);
  const DTypeInfo e5m2 = dtype_info(DType::f8e5m2);
  EXPECT_EQ(e5m2.largest_finite, 57344);
  EXPECT_EQ(e5m2.smallest_subnormal, 0x1p-16);
  EXPECT_TRUE(e5m2.has_inf);
  const DTypeInfo f32 = dtype_info(DType::f32);
  EXPECT_EQ(f32.largest_finite, FLT_MAX);
  EXPECT_EQ(f32.smallest_normal, FLT_MIN);
  EXPECT_EQ(f32.smallest_subnormal, std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(f32.epsilon, FLT_EPSILON);
  EXPECT_EQ(f32.decimal_digits, FLT_DIG);
  const DTypeInfo f64 = dtype_info(DType::f64);
  EXPECT_EQ(f64.largest_finite, DBL_MAX);
  EXPECT_EQ(f64.smallest_subnormal, std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(f64.epsilon, DBL_EPSILON);
  EXPECT_EQ(f64.decimal_digits, DBL_DIG);
  for (DType dtype : kAllDTypes) EXPECT_EQ(std::size_t(dtype_info(dtype).bytes), dtype_size(dtype));
  bool has_tf32 = false;
  for (const auto& mode : compute_modes())
    if (mode.name == "tf32") has_tf32 = mode.storage == "f32" && mode.mantissa_bits() == 10;
  EXPECT_TRUE(has_tf32);
}

// ---- random inputs -----------------------------------------------------------------------------

// Random f32 inputs: half uniformly random bit patterns (every exponent, NaNs, infinities), half
// with exponents around the target format's range, where the rounding decisions are.
std::vector<float> random_inputs(const Spec& s, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int bias = (1 << (s.e - 1)) - 1;
  std::uniform_int_distribution<int> exponent(1 - bias - s.m - 3, bias + 3);
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto bits = static_cast<std::uint32_t>(rng());
    if (i % 2 == 0) {
      out[i] = std::bit_cast<float>(bits);
    } else {
      const int e = std::clamp(exponent(rng), -149, 127);
      const float mantissa = 1.0f + static_cast<float>(bits & 0x7fffff) * 0x1p-23f;
      out[i] = std::ldexp(bits >> 31 ? -mantissa : mantissa, e);
    }
  }
  return out;
}

TEST(Numerics, RandomF32AgainstOracle) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(std::string(dtype_name(s.dtype)));
    const auto inputs = random_inputs(s, 400'000, 1234 + s.e);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool saturate = i % 3 == 0;
      const std::uint32_t expected = oracle_encode(s, inputs[i], saturate);
      ASSERT_EQ(encode_bits(s.dtype, inputs[i], saturate), expected) << std::hex << f32_bits(inputs[i]);
      ASSERT_EQ(encode_f32(s.dtype, inputs[i], saturate), expected) << std::hex << f32_bits(inputs[i]);
    }
  }
}

// The two implementations against each other on many millions of inputs (fast).
TEST(Numerics, RandomF32ReferenceAgreesWithFastPath) {
  for (const Spec& s : kSpecs) {
    SCOPED_TRACE(std::string(dtype_name(s.dtype)));
    const auto inputs = random_inputs(s, 4'000'000, 99 + s.m);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool saturate = i % 2 == 0;
      ASSERT_EQ(encode_bits(s.dtype, inputs[i], saturate), encode_f32(s.dtype, inputs[i], saturate))
          << std::hex << f32_bits(inputs[i]);
    }
  }
}

__attribute__((target("avx,f16c"))) std::uint16_t f16c_convert(float x) {
  return static_cast<std::uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
}

TEST(Numerics, RandomF32AgainstF16C) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU lacks F16C";
  const auto inputs = random_inputs(kSpecs[0], 8'000'000, 7);
  for (float x : inputs) {
    const std::uint16_t hardware = f16c_convert(x);
    const auto ours = static_cast<std::uint16_t>(encode_bits(DType::f16, x));
    if (std::isnan(x))
      ASSERT_TRUE(std::isnan(decode_bits(DType::f16, hardware)) && ours == ((hardware & 0x8000) | 0x7e00));
    else
      ASSERT_EQ(ours, hardware) << std::hex << f32_bits(x);
  }
}

__attribute__((target("avx512f,avx512bf16,avx512vl"))) std::uint16_t avx512bf16_convert(float x) {
  const __m128bh packed = _mm_cvtneps_pbh(_mm_set_ss(x));
  return static_cast<std::uint16_t>(_mm_extract_epi16((__m128i)packed, 0));
}

TEST(Numerics, RandomF32AgainstAvx512Bf16) {
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "this CPU lacks AVX512_BF16";
  const auto inputs = random_inputs(kSpecs[1], 8'000'000, 8);
  std::size_t subnormals = 0;
  for (float x : inputs) {
    const std::uint16_t hardware = avx512bf16_convert(x);
    const auto ours = static_cast<std::uint16_t>(encode_bits(DType::bf16, x));
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(decode_bits(DType::bf16, hardware)));
      ASSERT_EQ(ours, (hardware & 0x8000) | 0x7fc0);
    } else if (std::fpclassify(x) == FP_SUBNORMAL) {
      // vcvtneps2bf16 reads f32 subnormals as zero (see kernels/cpu/convert.cpp); we keep them.
      ASSERT_EQ(hardware, f32_bits(x) >> 31 << 15) << std::hex << f32_bits(x);
      ++subnormals;
    } else {
      ASSERT_EQ(ours, hardware) << std::hex << f32_bits(x);
    }
  }
  EXPECT_GT(subnormals, 0u);
}

}  // namespace
}  // namespace flopscope
