#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "flopscope/dtype.hpp"
#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "harness/harness.hpp"
#ifdef FLOPSCOPE_HAVE_CUDA
#include "harness/cuda.hpp"
#endif

using namespace flopscope;

namespace {

// Every CPU variant against copy_reference, for every dtype's element size, odd sizes and
// unaligned source and destination offsets; the bytes around dst must stay untouched.
void check_cpu_variant(const kernels::CopyVariant& variant, std::size_t count, std::size_t element_size,
                       std::size_t src_offset, std::size_t dst_offset) {
  const std::size_t bytes = count * element_size;
  std::vector<unsigned char> src(bytes + 64), dst(bytes + 128, 0xA5), ref(bytes + 128, 0xA5);
  bench::fill_random_bytes(src.data(), src.size(), count * 31 + element_size);
  kernels::copy_reference(ref.data() + dst_offset, src.data() + src_offset, count, element_size);
  variant.run(dst.data() + dst_offset, src.data() + src_offset, count, element_size);
  ASSERT_EQ(std::memcmp(dst.data(), ref.data(), dst.size()), 0)
      << variant.name << " count=" << count << " element_size=" << element_size << " offsets=" << src_offset << ","
      << dst_offset << ": " << bench::compare_exact(dst.data(), ref.data(), dst.size(), 1).value_or("");
}

}  // namespace

TEST(CopyReference, CopiesEveryByte) {
  std::vector<unsigned char> src(100), dst(100, 0);
  std::iota(src.begin(), src.end(), 1);
  kernels::copy_reference(dst.data(), src.data(), 25, 4);
  EXPECT_EQ(src, dst);
}

TEST(CpuCopy, EveryVariantMatchesTheReferenceForEveryDtypeAndOddSizes) {
  for (const auto& variant : kernels::cpu_copy_variants()) {
    ASSERT_TRUE(variant.available());
    for (DType dtype : kAllDTypes)
      for (std::size_t count : {0u, 1u, 17u, 255u, 4097u, 100003u})
        for (std::size_t offset : {0u, 1u, 3u}) check_cpu_variant(variant, count, dtype_size(dtype), offset, 2 * offset + 1);
  }
}

TEST(CpuCopy, StreamingPathAboveTheLastLevelCacheIsExact) {
  // Larger than the streaming threshold (the LLC), unaligned: exercises the non-temporal stores.
  const std::size_t bytes = kernels::cpu_streaming_threshold_bytes() + 4096 + 3;
  const auto& simd = kernels::cpu_copy_variants()[2];
  ASSERT_EQ(simd.name, "simd");
  bench::HostBuffer src(bytes + 8), dst(bytes + 8);
  bench::fill_random_bytes(src.data, bytes + 8, 5);
  std::memset(dst.data, 0, bytes + 8);
  simd.run(dst.data + 5, src.data + 1, bytes, 1);
  EXPECT_EQ(bench::compare_exact(dst.data + 5, src.data + 1, bytes, 1), std::nullopt);
  EXPECT_EQ(dst.data[4], 0);
  EXPECT_EQ(dst.data[bytes + 5], 0);
}

TEST(CudaCopy, EveryVariantMatchesTheSourceOnTheDevice) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
#ifdef FLOPSCOPE_HAVE_CUDA
  for (const auto& variant : kernels::cuda::copy_variants()) {
    for (std::size_t count : {1u, 17u, 4097u, 1000003u}) {
      for (std::size_t offset : {0u, 1u, 16u}) {
        const std::size_t bytes = count * 4;
        bench::cuda::DeviceBuffer src(bytes + 64), dst(bytes + 64);
        ASSERT_TRUE(src.error.empty() && dst.error.empty());
        bench::cuda::fill_random(src.data, bytes + 64, count);
        bench::cuda::fill_bytes(dst.data, 0xA5, bytes + 64);
        auto* out = static_cast<unsigned char*>(dst.data) + offset;
        auto* in = static_cast<unsigned char*>(src.data) + offset;
        variant.run(out, in, count, 4, nullptr);
        ASSERT_EQ(bench::cuda::take_error(), std::nullopt);
        EXPECT_EQ(bench::cuda::compare_exact(out, in, count, 4), std::nullopt) << variant.name << " " << count;
      }
    }
  }
#endif
}
