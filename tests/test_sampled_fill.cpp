// The harness's fills on a CUDA device (Validation::sampled, bench_peak's copy and triad) give
// the host fill's values: random_bits_element against kernels::fill_random_bytes on the host, for
// elements of 1, 2, 4 and 8 bytes and a tail that is no whole 8-byte word; on a GPU, the device
// fills read back against the host fills.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/fill.hpp"
#include "flopscope/kernels/hash.hpp"
#include "harness/case.hpp"
#ifdef FLOPSCOPE_HAVE_CUDA
#include "harness/cuda.hpp"
#endif

using namespace flopscope;
using namespace flopscope::bench;

TEST(SampledFill, RandomBitsElementIsTheHostFillsBytes) {
  for (std::size_t size : {1, 2, 4, 8}) {
    const std::size_t bytes = 4099 * size;  // 4099 elements: a tail of bytes past the last whole word
    std::vector<unsigned char> host(bytes);
    kernels::fill_random_bytes(host.data(), bytes, fill_seed(1));
    for (std::int64_t i = 0; i < 4099; ++i) {
      std::uint64_t expected = 0;
      std::memcpy(&expected, host.data() + std::size_t(i) * size, size);
      ASSERT_EQ(random_bits_element(fill_seed(1), i, size, bytes), expected) << "element " << i << " of " << size << " bytes";
    }
  }
  EXPECT_EQ(fill_seed(0), 42u);
  EXPECT_NE(fill_seed(1), fill_seed(2));
}

#ifdef FLOPSCOPE_HAVE_CUDA
TEST(SampledFill, DeviceFillsAreTheHostFills) {
  if (auto reason = kernels::cuda::unavailable_reason(0)) GTEST_SKIP() << "CUDA unavailable: " << *reason;
  const std::int64_t count = 4099;
  cuda::DeviceBuffer bits(std::size_t(count) * 2, 0), floats(std::size_t(count) * 4, 0);
  ASSERT_TRUE(bits.error.empty() && floats.error.empty()) << bits.error << floats.error;
  cuda::fill_random_bytes(bits.data, std::size_t(count) * 2, fill_seed(1));
  cuda::fill_small_integers_f32(floats.data, count, fill_seed(2));
  ASSERT_FALSE(cuda::take_error(0));
  std::vector<unsigned char> device_bits(std::size_t(count) * 2), host_bits(std::size_t(count) * 2);
  std::vector<float> device_floats(static_cast<std::size_t>(count)), host_floats(static_cast<std::size_t>(count));
  cuda::download(device_bits.data(), bits.data, device_bits.size());
  cuda::download(device_floats.data(), floats.data, std::size_t(count) * 4);
  kernels::fill_random_bytes(host_bits.data(), host_bits.size(), fill_seed(1));
  const std::int64_t sizes[] = {count};
  kernels::fill_small_integers(TensorRef::contiguous(host_floats.data(), DType::f32, sizes), fill_seed(2));
  EXPECT_EQ(device_bits, host_bits);
  EXPECT_EQ(device_floats, host_floats);
  EXPECT_EQ(cuda::read_element(static_cast<const unsigned char*>(bits.data) + 2 * 4098, 2),
            random_bits_element(fill_seed(1), 4098, 2, std::size_t(count) * 2));
}
#endif
