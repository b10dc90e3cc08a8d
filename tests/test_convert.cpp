// Conversion kernels (CPU and CUDA) against the reference, bit for bit, NaNs included.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "flopscope/kernels/convert.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/numerics.hpp"

namespace flopscope::kernels {
namespace {

// Inputs that matter: every narrow pattern's value and the values halfway between neighbours
// (and just either side), f32 specials and subnormals, then random bit patterns.
std::vector<float> interesting_inputs(DType dtype, std::size_t random_count) {
  std::vector<float> out;
  const auto patterns = std::uint32_t{1} << (8 * dtype_size(dtype));
  for (std::uint32_t b = 0; b + 1 < patterns; ++b) {
    const double lo = decode_bits(dtype, b), hi = decode_bits(dtype, b + 1);
    out.push_back(static_cast<float>(lo));
    if (std::isfinite(lo) && std::isfinite(hi) && std::signbit(lo) == std::signbit(hi)) {
      const auto mid = static_cast<float>((lo + hi) / 2);
      out.push_back(mid);
      out.push_back(std::nextafter(mid, INFINITY));
      out.push_back(std::nextafter(mid, -INFINITY));
    }
  }
  for (std::uint32_t bits : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x00000001u,
                             0x807fffffu, 0x00400000u, 0x7f7fffffu, 0x477ff000u, 0x43e80000u, 0x43e80001u})
    out.push_back(std::bit_cast<float>(bits));
  std::mt19937 rng(42);
  for (std::size_t i = 0; i < random_count; ++i) out.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  return out;
}

std::vector<std::uint8_t> all_patterns_repeated(DType dtype, std::size_t count) {
  const std::size_t size = dtype_size(dtype);
  std::vector<std::uint8_t> out(count * size);
  for (std::size_t i = 0; i < count; ++i) {
    const auto pattern = static_cast<std::uint32_t>(i * 2654435761u) & ((std::uint32_t{1} << (8 * size)) - 1);
    const std::uint32_t value = i < (std::size_t{1} << (8 * size)) ? static_cast<std::uint32_t>(i) : pattern;
    std::memcpy(out.data() + i * size, &value, size);  // little-endian: the low bytes
  }
  return out;
}

// A one-element problem of `narrow`, for asking a variant whether it takes and can run a dtype.
ConvertProblem probe(DType narrow) {
  static float in = 0;
  static std::uint16_t out = 0;
  static const std::int64_t one[] = {1};
  return {TensorRef::contiguous(&out, narrow, one), TensorRef::contiguous(&in, DType::f32, one)};
}

void encode_with(const ConvertVariant& v, const float* in, void* out, std::size_t count, DType to, bool saturate) {
  convert_host(v, in, DType::f32, out, to, count, saturate);
}

void decode_with(const ConvertVariant& v, const void* in, float* out, std::size_t count, DType from) {
  convert_host(v, in, from, out, DType::f32, count);
}

struct Case {
  std::string variant;
  DType dtype;
};

class CpuConvert : public ::testing::TestWithParam<Case> {
 protected:
  const ConvertVariant& variant() { return variant_named(cpu_convert_variants(), GetParam().variant); }
  std::optional<std::string> unavailable() { return variant().unavailable(probe(GetParam().dtype)); }
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& variant : cpu_convert_variants())
    for (DType dtype : kNarrowDTypes)
      if (variant.takes(probe(dtype))) cases.push_back({std::string(variant.name), dtype});
  return cases;
}

TEST_P(CpuConvert, EncodeMatchesReference) {
  const ConvertVariant& v = variant();
  if (auto reason = unavailable()) GTEST_SKIP() << *reason;
  const DType dtype = GetParam().dtype;
  const std::size_t size = dtype_size(dtype);
  const auto inputs = interesting_inputs(dtype, 300'000);
  for (bool saturate : {false, true}) {
    std::vector<std::uint8_t> expected(inputs.size() * size);
    encode_reference(inputs.data(), expected.data(), inputs.size(), dtype, saturate);
    // Odd sizes and unaligned starts: the vector bodies, heads and tails all get exercised.
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{1000}, inputs.size() - 5}) {
      for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
        if (count + offset > inputs.size()) continue;
        std::vector<std::uint8_t> out((count + offset) * size + 1, 0xcd);
        encode_with(v, inputs.data() + offset, out.data() + offset * size, count, dtype, saturate);
        for (std::size_t i = 0; i < count; ++i) {
          std::uint32_t got = 0, want = 0;
          std::memcpy(&got, out.data() + (offset + i) * size, size);
          std::memcpy(&want, expected.data() + (offset + i) * size, size);
          ASSERT_EQ(got, want) << "input " << std::hex << std::bit_cast<std::uint32_t>(inputs[offset + i])
                               << " saturate " << saturate << " count " << std::dec << count << " offset " << offset;
        }
        EXPECT_EQ(out[(count + offset) * size], 0xcd) << "wrote past the end";
      }
    }
  }
}

TEST_P(CpuConvert, EncodeStreamingAndMisalignedOutput) {
  const ConvertVariant& v = variant();
  if (auto reason = unavailable()) GTEST_SKIP() << *reason;
  const DType dtype = GetParam().dtype;
  const std::size_t size = dtype_size(dtype);
  const auto inputs = interesting_inputs(dtype, 100'000);
  std::vector<std::uint8_t> expected(inputs.size() * size);
  encode_reference(inputs.data(), expected.data(), inputs.size(), dtype, false);
  const std::size_t saved = convert_streaming_threshold_bytes();
  set_convert_streaming_threshold_bytes(1024);
  // Output at an odd byte address (misaligned for 16-bit elements) and at an aligned one.
  for (std::size_t byte_offset : {std::size_t{0}, std::size_t{1}}) {
    std::vector<std::uint8_t> out(inputs.size() * size + 1);
    encode_with(v, inputs.data(), out.data() + byte_offset, inputs.size(), dtype, false);
    EXPECT_EQ(std::memcmp(out.data() + byte_offset, expected.data(), expected.size()), 0) << "offset " << byte_offset;
  }
  set_convert_streaming_threshold_bytes(saved);
}

TEST_P(CpuConvert, DecodeMatchesReference) {
  const ConvertVariant& v = variant();
  if (auto reason = unavailable()) GTEST_SKIP() << *reason;
  const DType dtype = GetParam().dtype;
  const std::size_t size = dtype_size(dtype);
  const std::size_t total = (std::size_t{1} << (8 * size)) + 100'003;
  const auto inputs = all_patterns_repeated(dtype, total);
  std::vector<float> expected(total);
  decode_reference(inputs.data(), expected.data(), total, dtype);
  const std::size_t saved = convert_streaming_threshold_bytes();
  for (std::size_t threshold : {saved, std::size_t{1024}}) {
    set_convert_streaming_threshold_bytes(threshold);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{17}, total - 3}) {
      for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
        if (count + offset > total) continue;
        std::vector<float> out(count + offset + 1, -1.0f);
        decode_with(v, inputs.data() + offset * size, out.data() + offset, count, dtype);
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(out[offset + i]), std::bit_cast<std::uint32_t>(expected[offset + i]))
              << "index " << offset + i << " count " << count;
        EXPECT_EQ(out[count + offset], -1.0f) << "wrote past the end";
      }
    }
  }
  set_convert_streaming_threshold_bytes(saved);
}

INSTANTIATE_TEST_SUITE_P(Variants, CpuConvert, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return param.param.variant + "_" + std::string(dtype_name(param.param.dtype));
                         });

TEST(CpuConvertTable, EveryNarrowDTypeHasAVariantAndAFastest) {
  for (DType dtype : kNarrowDTypes) {
    const ConvertVariant& best = best_cpu_convert_variant(dtype);
    EXPECT_TRUE(best.takes(probe(dtype)));
    EXPECT_FALSE(best.unavailable(probe(dtype)).has_value());
  }
  EXPECT_EQ(find_variant(cpu_convert_variants(), "no such variant"), nullptr);
  // f32 -> f32 is not a conversion: every variant says so, and the reference throws.
  const ConvertProblem identity = probe(DType::f32);
  EXPECT_TRUE(cpu_convert_variants()[0].unavailable(identity).has_value());
  EXPECT_THROW(convert_reference(identity), std::invalid_argument);
}

// ---- CUDA --------------------------------------------------------------------------------------

class CudaConvert : public ::testing::TestWithParam<DType> {};

TEST_P(CudaConvert, MatchesReference) {
  if (auto reason = cuda::unavailable_reason()) GTEST_SKIP() << *reason;
  ASSERT_EQ(cuda_convert_variants().size(), 1u);
  const ConvertVariant& intrinsics = cuda_convert_variants()[0];
  const DType dtype = GetParam();
  const std::size_t size = dtype_size(dtype);
  const auto inputs = interesting_inputs(dtype, 2'000'000);
  for (bool saturate : {false, true}) {
    std::vector<std::uint8_t> expected(inputs.size() * size), got(inputs.size() * size);
    encode_reference(inputs.data(), expected.data(), inputs.size(), dtype, saturate);
    encode_with(intrinsics, inputs.data(), got.data(), inputs.size(), dtype, saturate);
    for (std::size_t i = 0; i < inputs.size(); ++i)
      ASSERT_EQ(std::memcmp(got.data() + i * size, expected.data() + i * size, size), 0)
          << "input " << std::hex << std::bit_cast<std::uint32_t>(inputs[i]) << " saturate " << saturate;
  }
  const std::size_t total = (std::size_t{1} << (8 * size)) + 1001;
  const auto codes = all_patterns_repeated(dtype, total);
  std::vector<float> expected(total), got(total);
  decode_reference(codes.data(), expected.data(), total, dtype);
  decode_with(intrinsics, codes.data(), got.data(), total, dtype);
  for (std::size_t i = 0; i < total; ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(expected[i])) << "index " << i;
}

INSTANTIATE_TEST_SUITE_P(DTypes, CudaConvert, ::testing::ValuesIn(kNarrowDTypes),
                         [](const ::testing::TestParamInfo<DType>& param) { return std::string(dtype_name(param.param)); });

}  // namespace
}  // namespace flopscope::kernels
