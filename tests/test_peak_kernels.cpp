#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "flopscope/kernels/peak.hpp"

using namespace flopscope;
using kernels::FmaChainProblem;

// Each available FMA-chain kernel leaves, in lane 0 of chain 0 of every thread, exactly what the
// scalar reference computes, and counts threads x chains x lanes x FLOPs per lane x trips FLOPs.
TEST(CpuPeakKernels, MatchTheScalarRecurrenceBitForBit) {
  int ran = 0;
  for (const auto& kernel : kernels::cpu_fma_chain_variants()) {
    const ComputeMode mode = kernel.info.mode;
    const bool narrow = mode == ComputeMode::bf16 || mode == ComputeMode::f16;
    const double start = narrow ? 0.0 : 0.5, a = narrow ? -1.0 : 0.999999, b = narrow ? 1.0 : 1e-3;
    for (std::uint64_t trips : {1u, 7u, 1000u}) {
      std::vector<double> out(3, -12345);
      const std::int64_t threads[] = {3};
      const FmaChainProblem problem{TensorRef::contiguous(out.data(), DType::f64, threads), mode, trips, start, a, b};
      ASSERT_TRUE(kernel.takes(problem));
      if (auto reason = kernel.unavailable(problem)) {
        EXPECT_TRUE(reason->find("this CPU lacks") != std::string::npos || reason->find("refused AMX") != std::string::npos)
            << *reason;
        break;
      }
      ++ran;
      kernel.prepare(problem)(nullptr);
      // AMX: every element of a 16 x 16 f32 tile gains 32 bf16 products a step; vdpbf16ps 2 a lane.
      const bool amx = kernel.name == "amx_bf16";
      const double expected = kernels::fma_chain_reference(mode, trips, start, a, b, amx ? 32 : 2);
      for (double got : out)
        EXPECT_EQ(std::memcmp(&got, &expected, sizeof got), 0)
            << kernel.name << " " << compute_mode_name(mode) << " trips=" << trips << ": " << got << " vs " << expected;
      const double lanes = amx                       ? 16 * 16
                           : mode == ComputeMode::f64 ? (kernel.name == "fma_avx2" ? 4 : 8)
                           : mode == ComputeMode::f16 ? 32
                                                      : (kernel.name == "fma_avx2" ? 8 : 16);
      const double per_lane = amx ? 64 : mode == ComputeMode::bf16 ? 4 : 2;
      EXPECT_EQ(double(kernels::fma_chain_flops(kernel, problem)), 3 * double(trips) * kernel.info.chains * lanes * per_lane)
          << kernel.name << " " << compute_mode_name(mode);
    }
  }
  EXPECT_GT(ran, 0) << "no peak kernel runs on this CPU";
}

TEST(CpuPeakKernels, ReferencesFollowTheRecurrence) {
  EXPECT_EQ(kernels::fma_chain_reference(ComputeMode::f64, 2, 1.0, 2.0, 3.0), (1.0 * 2 + 3) * 2 + 3);
  EXPECT_EQ(kernels::fma_chain_reference(ComputeMode::bf16, 10, 0.0, -1.0, 1.0), -20.0);  // acc += 2 * (-1 * 1)
  EXPECT_THROW(kernels::fma_chain_reference(ComputeMode::tf32, 1, 0, 0, 0), std::invalid_argument);
}

TEST(Triad, MatchesBPlusScalarTimesC) {
  const auto& triad = kernels::variant_named(kernels::cpu_triad_variants(), "triad");
  for (std::size_t count : {0u, 1u, 9u, 1000u, 123457u}) {
    std::vector<double> a(count + 1, -7.0), b(count), c(count);
    for (std::size_t i = 0; i < count; ++i) {
      b[i] = double(i) * 0.5;
      c[i] = 3.0 - double(i % 11);
    }
    const std::int64_t n[] = {static_cast<std::int64_t>(count)};
    const kernels::TriadProblem problem{TensorRef::contiguous(a.data(), DType::f64, n),
                                        TensorRef::contiguous(b.data(), DType::f64, n),
                                        TensorRef::contiguous(c.data(), DType::f64, n), 2.5};
    ASSERT_EQ(triad.unavailable(problem), std::nullopt);
    triad.prepare(problem)(nullptr);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(a[i], b[i] + 2.5 * c[i]) << i;  // exact: small binary fractions
    EXPECT_EQ(a[count], -7.0);
  }
}
