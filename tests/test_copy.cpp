#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <numeric>
#include <vector>

#include "flopscope/compare.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;
using kernels::CopyProblem;

namespace {

// A contiguous copy of `count` elements of `dtype` between raw (possibly unaligned) addresses.
CopyProblem problem(void* dst, const void* src, std::size_t count, DType dtype, Device device = Device::cpu()) {
  const std::int64_t sizes[] = {static_cast<std::int64_t>(count)};
  return {TensorRef::contiguous(dst, dtype, sizes, device), TensorRef::contiguous(const_cast<void*>(src), dtype, sizes, device)};
}

// Every CPU variant against copy_reference, for every dtype's element size, odd sizes and
// unaligned source and destination offsets; the bytes around dst must stay untouched.
void check_cpu_variant(const kernels::CopyVariant& variant, std::size_t count, DType dtype, std::size_t src_offset,
                       std::size_t dst_offset) {
  const std::size_t bytes = count * dtype_size(dtype);
  std::vector<unsigned char> src(bytes + 64), dst(bytes + 128, 0xA5), ref(bytes + 128, 0xA5);
  kernels::fill_random_bytes(src.data(), src.size(), count * 31 + dtype_size(dtype));
  kernels::copy_reference(problem(ref.data() + dst_offset, src.data() + src_offset, count, dtype));
  const CopyProblem p = problem(dst.data() + dst_offset, src.data() + src_offset, count, dtype);
  ASSERT_EQ(variant.unavailable(p), std::nullopt) << variant.name;
  variant.prepare(p)(nullptr);
  ASSERT_EQ(std::memcmp(dst.data(), ref.data(), dst.size()), 0)
      << variant.name << " count=" << count << " dtype=" << dtype_name(dtype) << " offsets=" << src_offset << ","
      << dst_offset << ": " << compare_exact(dst.data(), ref.data(), dst.size(), 1).value_or("");
}

}  // namespace

TEST(CopyReference, CopiesEveryByte) {
  std::vector<unsigned char> src(100), dst(100, 0);
  std::iota(src.begin(), src.end(), 1);
  kernels::copy_reference(problem(dst.data(), src.data(), 25, DType::f32));
  EXPECT_EQ(src, dst);
}

TEST(CopyReference, CopiesAStridedViewIntoAContiguousOne) {
  Tensor x = arange(12).view({3, 4});
  Tensor out = empty({4, 3});
  kernels::copy_reference({out.ref(), x.t().ref()});
  EXPECT_EQ(out.to_vector(), x.t().contiguous().to_vector());
}

TEST(CpuCopy, EveryVariantMatchesTheReferenceForEveryDtypeAndOddSizes) {
  for (const auto& variant : kernels::cpu_copy_variants()) {
    for (DType dtype : kAllDTypes)
      for (std::size_t count : {0u, 1u, 17u, 255u, 4097u, 100003u})
        for (std::size_t offset : {0u, 1u, 3u}) check_cpu_variant(variant, count, dtype, offset, 2 * offset + 1);
  }
}

TEST(CpuCopy, ContiguousVariantsSayTheyNeedContiguousOperands) {
  Tensor x = arange(12).view({3, 4});
  Tensor out = empty({4, 3});
  for (const auto& variant : kernels::cpu_copy_variants()) {
    const auto reason = variant.unavailable({out.ref(), x.t().ref()});
    ASSERT_TRUE(reason.has_value()) << variant.name;
    EXPECT_NE(reason->find("needs contiguous operands"), std::string::npos) << *reason;
  }
}

TEST(CpuCopy, StreamingPathAboveTheLastLevelCacheIsExact) {
  // Larger than the streaming threshold (the LLC), unaligned: exercises the non-temporal stores.
  const std::size_t bytes = kernels::cpu_streaming_threshold_bytes() + 4096 + 3;
  const auto& simd = kernels::variant_named(kernels::cpu_copy_variants(), "simd");
  kernels::HostBuffer src(bytes + 8), dst(bytes + 8);
  kernels::fill_random_bytes(src.data, bytes + 8, 5);
  std::memset(dst.data, 0, bytes + 8);
  simd.prepare(problem(dst.data + 5, src.data + 1, bytes, DType::f8e4m3))(nullptr);
  EXPECT_EQ(compare_exact(dst.data + 5, src.data + 1, bytes, 1), std::nullopt);
  EXPECT_EQ(dst.data[4], 0);
  EXPECT_EQ(dst.data[bytes + 5], 0);
}

// The transparent huge pages of the mapping that holds `address` (/proc/self/smaps), in bytes.
std::size_t huge_page_bytes_at(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::size_t(std::stoull(line.substr(14))) * 1024;  // "AnonHugePages:   8192 kB"
    }
  }
  return 0;
}

TEST(HostBuffer, HugePagesWhereAskedForAndNotBelowTheirSize) {
  const std::string mode = kernels::transparent_huge_pages_mode();
  if (mode.empty() || mode == "never") GTEST_SKIP() << "no transparent huge pages here (mode '" << mode << "')";
  kernels::set_huge_pages(true);
  const std::size_t bytes = (std::size_t{8} << 20) + 5;
  kernels::HostBuffer big(bytes), small(std::size_t{1} << 20);
  kernels::set_huge_pages(false);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big.data) % (std::size_t{2} << 20), 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data) % 64, 0u);
  std::memset(big.data, 1, bytes);
  // Faulted in after madvise(MADV_HUGEPAGE): the kernel grants 2 MiB pages unless it has no free
  // 2 MiB of memory even after compaction.
  EXPECT_GE(huge_page_bytes_at(big.data + bytes / 2), std::size_t{2} << 20)
      << "8 MiB asked for in huge pages (mode " << mode << ") got none";
}

TEST(CudaCopy, EveryVariantMatchesTheSourceOnTheDevice) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  ASSERT_FALSE(kernels::cuda_copy_variants().empty());
  for (const auto& variant : kernels::cuda_copy_variants()) {
    // vec16's paths: bytes only (too short), head + vectors + tail, one unrolled step, and many
    // grid-stride steps of 4 loads with a remainder (32 MiB: more than one full grid of them).
    for (std::size_t count : {1u, 17u, 4097u, 1000003u, 8388611u}) {
      for (std::size_t offset : {0u, 1u, 16u}) {
        const std::size_t bytes = count * 4;
        std::vector<unsigned char> host_src(bytes + 64), host_dst(bytes + 64, 0xA5), expected(bytes + 64, 0xA5);
        kernels::fill_random_bytes(host_src.data(), host_src.size(), count);
        std::memcpy(expected.data() + offset, host_src.data() + offset, bytes);
        kernels::cuda::DeviceMemory src(bytes + 64), dst(bytes + 64);
        kernels::cuda::copy_to_device(src.data, host_src.data(), bytes + 64);
        kernels::cuda::copy_to_device(dst.data, host_dst.data(), bytes + 64);
        auto* out = static_cast<unsigned char*>(dst.data) + offset;
        auto* in = static_cast<unsigned char*>(src.data) + offset;
        variant.prepare(problem(out, in, count, DType::f32, Device::cuda(0)))(nullptr);
        kernels::cuda::synchronize();
        kernels::cuda::copy_to_host(host_dst.data(), dst.data, bytes + 64);
        EXPECT_EQ(compare_exact(host_dst.data(), expected.data(), bytes + 64, 1), std::nullopt)
            << variant.name << " " << count << " offset " << offset;
      }
    }
  }
}
