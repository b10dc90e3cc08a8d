// lib/'s accounting, checked arithmetic, compute modes, TensorRef and the tolerance comparison,
// against hand-computed values and exact arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/compare.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/tensor.hpp"
#include "test_util.hpp"

using namespace flopscope;
using test_util::error_of;

// ---- checked arithmetic ----

TEST(Checked, ProductsThatFitAreExact) {
  EXPECT_EQ(checked_mul<std::int64_t>(1 << 30, 1 << 30), std::int64_t{1} << 60);
  EXPECT_EQ(checked_numel(std::vector<std::int64_t>{49152, 12288}), std::int64_t{603979776});
  EXPECT_EQ(checked_numel(std::vector<std::int64_t>{}), 1);
  // An empty shape is empty however large its other sizes (fuzz/regressions/rearrange).
  EXPECT_EQ(checked_numel(std::vector<std::int64_t>{std::int64_t{1} << 62, 4, 0}), 0);
  EXPECT_EQ(checked_bytes(std::int64_t{1} << 28, 4), std::int64_t{1} << 30);
}

TEST(Checked, OverflowIsAnErrorNamingTheOperands) {
  // 2^61 f64 elements: 2^64 bytes, one more than int64 holds.
  EXPECT_THROW(checked_bytes(std::int64_t{1} << 61, 8), SizeOverflow);
  EXPECT_EQ(error_of([] { checked_bytes(std::int64_t{1} << 61, 8, "bytes of src"); }),
            "bytes of src: 2305843009213693952 x 8 overflows 64 bits");
  EXPECT_THROW(checked_numel(std::vector<std::int64_t>{1 << 22, 1 << 22, 1 << 22}), SizeOverflow);
  EXPECT_THROW(checked_add(std::numeric_limits<std::int64_t>::max(), std::int64_t{1}), SizeOverflow);
  EXPECT_THROW(checked_numel(std::vector<std::int64_t>{4, -1}), std::invalid_argument);
}

TEST(Checked, Count128HoldsTrainingRunFlops) {
  // 6 x 175e9 parameters x 300e9 tokens = 3.15e23, beyond int64, exact in 128 bits.
  const Count128 flops = checked_mul<Count128>(checked_mul<Count128>(6, 175'000'000'000), 300'000'000'000);
  EXPECT_EQ(count_str(flops), "315000000000000000000000");
  EXPECT_EQ(count_str(-42), "-42");
  EXPECT_EQ(count_str(0), "0");
  EXPECT_THROW(checked_mul<Count128>(flops, flops), SizeOverflow);
}

// ---- accounting ----

TEST(Accounting, CopyAndConvertMoveEachElementOnce) {
  EXPECT_EQ(copy_cost(1024, DType::f32), (Cost{0, 2 * 1024 * 4}));
  EXPECT_EQ(copy_cost(1024, DType::f8e4m3), (Cost{0, 2 * 1024}));
  EXPECT_EQ(convert_cost(1 << 20, DType::f32, DType::bf16), (Cost{0, (1 << 20) * 6}));
  EXPECT_THROW(copy_cost(std::int64_t{1} << 62, DType::f32), SizeOverflow);
}

TEST(Accounting, BroadcastOperandIsReadOnce) {
  // (B,T,D) + (D): B*T*D FLOPs; bytes: the big operand, D, and the output.
  const std::vector<std::int64_t> x{8, 1024, 768}, bias{768};
  const Cost cost = elementwise_binary_cost(x, bias, DType::f32);
  EXPECT_EQ(cost.flops, 8 * 1024 * 768);
  EXPECT_EQ(cost.bytes, (8 * 1024 * 768 * 2 + 768) * 4);
  EXPECT_EQ(elementwise_flops(std::vector<std::int64_t>{4, 1}, std::vector<std::int64_t>{3}), 12);
}

TEST(Accounting, MatmulIsTwoMnkForwardAndTwiceThatBackward) {
  EXPECT_EQ(matmul_flops(4096, 4096, 4096), 2 * std::int64_t{4096} * 4096 * 4096);
  const Cost forward = matmul_cost(8192, 768, 2304, DType::bf16, DType::bf16, DType::bf16);
  EXPECT_EQ(forward.flops, 2 * std::int64_t{8192} * 768 * 2304);
  EXPECT_EQ(forward.bytes, (8192 * 2304 + 2304 * 768 + 8192 * 768) * 2);
  const Cost backward = matmul_backward_cost(8192, 768, 2304, DType::f32);
  EXPECT_EQ(backward.flops, 2 * forward.flops);
  EXPECT_EQ(matmul_backward_cost(8192, 768, 2304, DType::f32, false).flops, forward.flops);
  // torch.matmul shapes: batch dimensions multiply.
  EXPECT_EQ(matmul_flops(std::vector<std::int64_t>{8, 128, 64}, std::vector<std::int64_t>{8, 64, 128}),
            2 * 8 * 128 * 64 * 128);
  EXPECT_THROW(matmul_flops(std::int64_t{1} << 21, std::int64_t{1} << 21, std::int64_t{1} << 21), SizeOverflow);
}

TEST(Accounting, TriadAndReduction) {
  EXPECT_EQ(triad_cost(100, DType::f64), (Cost{200, 2400}));
  EXPECT_EQ(reduction_cost(1000, 10, DType::f32), (Cost{990, 4040}));
  EXPECT_EQ(fma_flops(7), 14);
  // 2 threads x 1000 trips x 16 chains x 16 f32 lanes x 2 FLOPs (an AVX-512 FMA chain kernel)
  EXPECT_EQ(fma_chain_flops(2, 1000, 16, 16, 2), 1'024'000);
  EXPECT_THROW(fma_chain_flops(std::int64_t{1} << 40, std::int64_t{1} << 20, 16, 16, 4), SizeOverflow);
}

// Note [optimizer FLOPs], by hand: SGD 2 FLOPs and 3 f32 accesses per parameter; with momentum 4 and
// 5; AdamW 14 FLOPs and 7 f32 accesses; a bf16 working copy adds 2 bytes written per parameter.
TEST(Accounting, OptimizerStepCosts) {
  EXPECT_EQ(optimizer_step_cost(Optimizer::sgd, 100), (Cost{200, 1200}));
  EXPECT_EQ(optimizer_step_cost(Optimizer::adamw, 100), (Cost{1400, 2800}));
  EXPECT_EQ(optimizer_step_cost(Optimizer::adamw, 100, DType::bf16), (Cost{1400, 3000}));
  EXPECT_EQ(optimizer_step_cost(Optimizer::sgd_momentum, 100), (Cost{400, 2000}));
  EXPECT_EQ(optimizer_step_cost(Optimizer::sgd, 0), (Cost{0, 0}));
  EXPECT_THROW(optimizer_step_cost(Optimizer::adamw, std::int64_t{1} << 62), SizeOverflow);
  EXPECT_EQ(optimizer_name(Optimizer::adamw), "adamw");
}

// ---- compute modes ----

TEST(ComputeModes, NamesRoundTripAndFp8SharesOnePeak) {
  for (const auto& info : compute_modes()) {
    EXPECT_EQ(parse_compute_mode(info.name), info.mode) << info.name;
    EXPECT_EQ(compute_mode_name(info.mode), info.name);
  }
  EXPECT_EQ(parse_compute_mode("bfloat16"), ComputeMode::bf16);
  EXPECT_EQ(parse_compute_mode("tf32"), ComputeMode::tf32);
  EXPECT_EQ(parse_compute_mode("f33"), std::nullopt);
  EXPECT_EQ(peak_key(ComputeMode::f8e5m2_e4m3), "f8");
  EXPECT_EQ(peak_key(ComputeMode::tf32), "tf32");
  const auto& mixed = compute_mode_info(ComputeMode::f8e5m2_e4m3);
  EXPECT_EQ(mixed.a, DType::f8e5m2);
  EXPECT_EQ(mixed.b, DType::f8e4m3);
  EXPECT_EQ(mixed.accumulate, DType::f32);
  EXPECT_EQ(natural_compute_mode(DType::f16), ComputeMode::f16);
}

// ---- TensorRef ----

TEST(TensorRef, ViewsOfATensorAgreeWithTheTensor) {
  Tensor x = arange(24).view({2, 3, 4});
  Tensor t = x.permute({2, 0, 1});
  TensorRef ref = t.ref();
  EXPECT_EQ(ref.dims, 3);
  EXPECT_EQ(std::vector<std::int64_t>(ref.shape().begin(), ref.shape().end()), t.shape());
  EXPECT_EQ(std::vector<std::int64_t>(ref.stride_list().begin(), ref.stride_list().end()), t.strides());
  EXPECT_FALSE(ref.is_contiguous());
  const int order[] = {1, 2, 0};
  EXPECT_TRUE(ref.permuted(order).is_contiguous());
  EXPECT_EQ(x.ref().transposed(0, 2).stride_list()[0], 1);
  // x[:, 1:, ::2] starts at element 4 and reaches element 4 + 1*12 + 1*4 + 1*2 = 22.
  Tensor s = x.slice(1, 1).slice(2, std::nullopt, std::nullopt, 2);
  EXPECT_EQ(s.ref().offset, 4);
  EXPECT_EQ(s.ref().storage_elements(), 23);
  EXPECT_EQ(s.ref().element_data(), s.data_ptr());
}

TEST(TensorRef, RejectsWhatItCannotHold) {
  const std::vector<std::int64_t> nine(9, 1);
  EXPECT_THROW(TensorRef::contiguous(nullptr, DType::f32, nine), ShapeError);
  const std::vector<std::int64_t> sizes{2, 2}, negative{-1, 1};
  EXPECT_THROW(TensorRef::strided(nullptr, DType::f32, sizes, negative), ShapeError);
  EXPECT_EQ(TensorRef::contiguous(nullptr, DType::f32, std::vector<std::int64_t>{3, 0}).storage_elements(), 0);
  const std::vector<std::int64_t> huge{std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_THROW(TensorRef::contiguous(nullptr, DType::f32, huge).storage_elements(), SizeOverflow);
}

// ---- comparison ----

TEST(Compare, ExactNamesTheFirstMismatchesWithTheirIndices) {
  Tensor a = arange(12).view({3, 4}), b = a.clone();
  EXPECT_EQ(compare_exact(a.ref(), b.ref()), std::nullopt);
  b.set({1, 2}, 100);
  b.set({2, 3}, -1);
  EXPECT_EQ(compare_exact(a.ref(), b.ref()), "2 of 12 elements differ (element 6, element 11)");
  // Strided operands report multi-indices.
  EXPECT_EQ(compare_exact(a.t().ref(), b.t().ref()), "2 of 12 elements differ ([2, 1] 6 vs 100, [3, 2] 11 vs -1)");
}

TEST(Compare, ExactSeesNegativeZeroAndNaNPayloads) {
  Tensor a = from_values({0.0, 1.0}), b = from_values({-0.0, 1.0});
  EXPECT_NE(compare_exact(a.ref(), b.ref()), std::nullopt);
  EXPECT_EQ(compare_close(a.ref(), b.ref(), {0, 0}), std::nullopt);  // 0 == -0 numerically
}

TEST(Compare, CloseUsesAtolPlusRtolTimesTheBasis) {
  Tensor ref = from_values({1.0, 1000.0, 0.0, NAN}, {}, {DType::f64});
  Tensor out = from_values({1.0 + 1e-6, 1000.0 + 1e-3, 1e-9, NAN}, {}, {DType::f64});
  EXPECT_EQ(compare_close(out.ref(), ref.ref(), {1e-8, 2e-6}), std::nullopt);
  const auto message = compare_close(out.ref(), ref.ref(), {1e-8, 5e-7});
  ASSERT_TRUE(message.has_value());
  EXPECT_NE(message->find("2 of 4 elements differ ([0]"), std::string::npos) << *message;
  // NaN against a number, and inf against a large number, are mismatches.
  Tensor nan_vs_one = from_values({NAN}), inf = from_values({INFINITY}), big = from_values({3e38});
  EXPECT_NE(compare_close(nan_vs_one.ref(), from_values({1.0}).ref(), {1, 1}), std::nullopt);
  EXPECT_NE(compare_close(inf.ref(), big.ref(), {1, 1}), std::nullopt);
  // A scale tensor replaces |expected|: a cancelling sum is judged against sum |a*b|.
  Tensor scale = from_values({10.0, 10.0, 10.0, 10.0}, {}, {DType::f64});
  const TensorRef ten = scale.ref();
  const auto against_scale = compare_close(out.ref(), ref.ref(), {0, 2e-6}, &ten);  // 2e-5 each: 1e-3 fails
  ASSERT_TRUE(against_scale.has_value());
  EXPECT_EQ(against_scale->substr(0, 30), "1 of 4 elements differ ([1] 10");
  Tensor cancelled = from_values({1e-6}, {}, {DType::f64}), zero = from_values({0.0}, {}, {DType::f64});
  Tensor sum_abs = from_values({1.0}, {}, {DType::f64});
  EXPECT_NE(compare_close(cancelled.ref(), zero.ref(), {0, 1e-5}), std::nullopt);
  const TensorRef scale_ref = sum_abs.ref();
  EXPECT_EQ(compare_close(cancelled.ref(), zero.ref(), {0, 1e-5}, &scale_ref), std::nullopt);
}

TEST(Compare, DefaultTolerancesArePyTorchs) {
  EXPECT_EQ(default_tolerance(DType::f32).rtol, 1.3e-6);
  EXPECT_EQ(default_tolerance(DType::f32).atol, 1e-5);
  EXPECT_EQ(default_tolerance(DType::f16).rtol, 1e-3);
  EXPECT_EQ(default_tolerance(DType::bf16).rtol, 1.6e-2);
  EXPECT_EQ(default_tolerance(DType::f8e4m3).rtol, 0.125);
  EXPECT_EQ(unit_roundoff(DType::f32), std::ldexp(1.0, -24));
  EXPECT_EQ(unit_roundoff(DType::bf16), std::ldexp(1.0, -8));
}

TEST(Compare, AccumulationBoundGrowsWithK) {
  const Tolerance short_sum = accumulation_tolerance(DType::bf16, DType::f32, DType::f32, 16);
  const Tolerance long_sum = accumulation_tolerance(DType::bf16, DType::f32, DType::f32, 4096);
  EXPECT_LT(short_sum.rtol, long_sum.rtol);
  EXPECT_DOUBLE_EQ(long_sum.rtol, 4096 * std::ldexp(1.0, -24) + std::ldexp(1.0, -24));
  // Against unrounded inputs, the operands' own rounding (2 u_bf16 per product) comes in.
  EXPECT_DOUBLE_EQ(accumulation_tolerance(DType::bf16, DType::f32, DType::bf16, 1, false).rtol,
                   std::ldexp(1.0, -24) + std::ldexp(1.0, -8) + 2 * std::ldexp(1.0, -8));
}

TEST(Compare, ErrorStatsAreRelativeToTheReference) {
  Tensor ref = from_values({1.0, 2.0, 0.0, 4.0}, {}, {DType::f64});
  Tensor out = from_values({1.1, 2.0, 5.0, 3.0}, {}, {DType::f64});
  const ErrorStats stats = error_stats(out.ref(), ref.ref());
  EXPECT_EQ(stats.count, 3);  // the zero reference is left out
  EXPECT_DOUBLE_EQ(stats.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(stats.max_rel, 0.25);
  EXPECT_NEAR(stats.mean_rel, (0.1 + 0 + 0.25) / 3, 1e-12);
  // Against a scale (Σ|a·b| of a dot product), the zero reference counts too.
  Tensor scale = from_values({10.0, 10.0, 10.0, 10.0}, {}, {DType::f64});
  const TensorRef scale_ref = scale.ref();
  const ErrorStats scaled = error_stats(out.ref(), ref.ref(), &scale_ref);
  EXPECT_EQ(scaled.count, 4);
  EXPECT_DOUBLE_EQ(scaled.max_rel, 0.5);  // |5 - 0| / 10
  EXPECT_NEAR(scaled.mean_rel, (0.1 + 0 + 5 + 1) / 10 / 4, 1e-12);
}
