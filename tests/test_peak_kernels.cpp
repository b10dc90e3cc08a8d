#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "flopscope/kernels/peak.hpp"

using namespace flopscope;

// Each available FMA-chain kernel leaves, in lane 0 of chain 0, exactly what the scalar
// reference computes, and reports chains x lanes x FLOPs per lane x trips FLOPs.
TEST(CpuPeakKernels, MatchTheScalarRecurrenceBitForBit) {
  int ran = 0;
  for (const auto& kernel : kernels::cpu_peak_kernels()) {
    if (!kernel.available()) continue;
    ++ran;
    const bool narrow = kernel.compute == "bf16" || kernel.compute == "f16";
    const double start = narrow ? 0.0 : 0.5, a = narrow ? -1.0 : 0.999999, b = narrow ? 1.0 : 1e-3;
    for (std::uint64_t trips : {1u, 7u, 1000u}) {
      double out = -12345;
      double flops = kernel.run(trips, start, a, b, &out);
      double expected = kernel.reference(trips, start, a, b);
      EXPECT_EQ(std::memcmp(&out, &expected, sizeof out), 0)
          << kernel.name << " " << kernel.compute << " trips=" << trips << ": " << out << " vs " << expected;
      const double lanes = kernel.compute == "f64" ? (kernel.name == "fma_avx2" ? 4 : 8)
                           : kernel.compute == "f16" ? 32
                                                      : (kernel.name == "fma_avx2" ? 8 : 16);
      const double per_lane = kernel.compute == "bf16" ? 4 : 2;
      EXPECT_EQ(flops, double(trips) * kernel.chains * lanes * per_lane) << kernel.name << " " << kernel.compute;
    }
  }
  EXPECT_GT(ran, 0) << "no peak kernel runs on this CPU";
}

TEST(CpuPeakKernels, ReferencesFollowTheRecurrence) {
  const auto& f64 = kernels::cpu_peak_kernels()[0];
  ASSERT_EQ(f64.compute, "f64");
  EXPECT_EQ(f64.reference(2, 1.0, 2.0, 3.0), (1.0 * 2 + 3) * 2 + 3);
  for (const auto& kernel : kernels::cpu_peak_kernels()) {
    if (kernel.compute == "bf16") {
      EXPECT_EQ(kernel.reference(10, 0.0, -1.0, 1.0), -20.0);  // acc += 2 * (-1 * 1)
    }
  }
}

TEST(Triad, MatchesBPlusScalarTimesC) {
  for (std::size_t count : {0u, 1u, 9u, 1000u, 123457u}) {
    std::vector<double> a(count + 1, -7.0), b(count), c(count);
    for (std::size_t i = 0; i < count; ++i) {
      b[i] = double(i) * 0.5;
      c[i] = 3.0 - double(i % 11);
    }
    kernels::triad_f64(a.data(), b.data(), c.data(), 2.5, count);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(a[i], b[i] + 2.5 * c[i]) << i;  // exact: small binary fractions
    EXPECT_EQ(a[count], -7.0);
  }
}
