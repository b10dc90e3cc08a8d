// Parameter initialization: fans as PyTorch defines them, bounds, and the lecture's statistics
// with tolerances derived from the sample size (fixed seeds: deterministic, never flaky).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "flopscope/broadcast.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/init.hpp"

namespace flopscope {
namespace {

TEST(Init, FansAsPyTorch) {
  const Fans linear = calculate_fans(Shape{32, 16});  // nn.Linear(16, 32).weight
  EXPECT_EQ(linear.fan_in, 16);
  EXPECT_EQ(linear.fan_out, 32);
  const Fans conv = calculate_fans(Shape{8, 4, 3, 3});  // nn.Conv2d(4, 8, 3).weight
  EXPECT_EQ(conv.fan_in, 36);
  EXPECT_EQ(conv.fan_out, 72);
  EXPECT_THROW(calculate_fans(Shape{5}), ShapeError);
  // A receptive field whose fans overflow: an error, not a wrapped (negative) fan.
  EXPECT_THROW(calculate_fans(Shape{8, 4, std::int64_t{1} << 31, std::int64_t{1} << 31}), SizeOverflow);
}

TEST(Init, TruncNormalStaysInBoundsWithTheRightMoments) {
  const double n = 200000;
  Tensor t = trunc_normal({200000}, 0, 1, -2, 2, 11, {DType::f64});
  const Moments m = moments(t);
  EXPECT_GE(m.min, -2);
  EXPECT_LE(m.max, 2);
  // Truncated standard normal on [a, b]: var = 1 + (a phi(a) - b phi(b)) / Z - ((phi(a) - phi(b)) / Z)^2.
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi); };
  auto cdf = [](double x) { return (1 + std::erf(x / std::numbers::sqrt2)) / 2; };
  const double z = cdf(2) - cdf(-2);
  const double sigma = std::sqrt(1 + (-2 * phi(-2) - 2 * phi(2)) / z);
  EXPECT_NEAR(m.mean, 0, 6 * sigma / std::sqrt(n));
  EXPECT_NEAR(m.std, sigma, 6 * sigma / std::sqrt(2 * n));
  // Shifted, scaled and asymmetric, in a narrow dtype whose rounding could cross a bound.
  Tensor narrow = trunc_normal({50000}, 0.1, 0.5, -0.3, 0.3, 12, {DType::bf16});
  const Moments nm = moments(narrow);
  EXPECT_GE(nm.min, -0.3);
  EXPECT_LE(nm.max, 0.3);
  EXPECT_GT(nm.max, 0.29);
  EXPECT_EQ(trunc_normal({64}, 0, 1, -2, 2, 5).to_vector(), trunc_normal({64}, 0, 1, -2, 2, 5).to_vector());
  EXPECT_THROW(trunc_normal({4}, 0, 1, 2, -2, 5), std::invalid_argument);
}

TEST(Init, Xavier) {
  const double n = 64 * 128;
  const double bound = std::sqrt(6.0 / (64 + 128));
  const Moments u = moments(xavier_uniform({64, 128}, 1.0, 21, {DType::f64}));
  EXPECT_GE(u.min, -bound);
  EXPECT_LE(u.max, bound);
  // The sample std of a uniform: sd ~ sigma * sqrt(0.8 / n) / 2 (kurtosis 1.8).
  EXPECT_NEAR(u.std, bound / std::sqrt(3.0), 6 * (bound / std::sqrt(3.0)) * std::sqrt(0.8 / n) / 2);
  const double sigma = std::sqrt(2.0 / (64 + 128)) * 2.0;  // gain 2
  const Moments g = moments(xavier_normal({64, 128}, 2.0, 22, {DType::f64}));
  EXPECT_NEAR(g.mean, 0, 6 * sigma / std::sqrt(n));
  EXPECT_NEAR(g.std, sigma, 6 * sigma / std::sqrt(2 * n));
  EXPECT_THROW(xavier_normal({64}, 1.0, 1), ShapeError);
}

// The lecture: x @ w with w ~ randn grows like sqrt(input_dim); scaled by 1/sqrt(input_dim) it
// stays near 1. Each output is a sum of input_dim products of independent standard normals, so
// it has variance input_dim (times the weights' variance); over batch * output_dim outputs the
// sample std is within a few 1/sqrt(2 * samples) of that (tolerance 6x that, plus slack for the
// outputs sharing rows of x and columns of w).
TEST(Init, OutputStdGrowsLikeSqrtInputDimUnlessScaled) {
  const std::int64_t batch = 32, output_dim = 32;
  const double samples = static_cast<double>(batch * output_dim);
  const double relative = 6 / std::sqrt(2 * samples) + 0.05;
  for (std::int64_t input_dim : {256, 4096}) {
    Tensor x = randn({batch, input_dim}, 1, {DType::f64});
    Tensor w = randn({input_dim, output_dim}, 2, {DType::f64});
    const double plain = moments(matmul(x, w)).std;
    EXPECT_NEAR(plain / std::sqrt(static_cast<double>(input_dim)), 1, relative) << input_dim;
    Tensor scaled = w / full({}, std::sqrt(static_cast<double>(input_dim)), {DType::f64});
    EXPECT_NEAR(moments(matmul(x, scaled)).std, 1, relative) << input_dim;
    Tensor truncated = trunc_normal({input_dim, output_dim}, 0, 1 / std::sqrt(static_cast<double>(input_dim)), -3, 3, 3,
                                    {DType::f64});
    EXPECT_NEAR(moments(matmul(x, truncated)).std, 1, relative) << input_dim;
  }
}

}  // namespace
}  // namespace flopscope
