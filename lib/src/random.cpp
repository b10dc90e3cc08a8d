#include "flopscope/random.hpp"

#include <cmath>
#include <limits>
#include <numbers>

namespace flopscope {

namespace {

constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

std::array<std::uint32_t, 4> philox_block(std::uint64_t seed, std::uint64_t index) {
  return philox4x32_10({static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), 0u, 0u},
                       {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
}

std::uint64_t join(std::uint32_t low, std::uint32_t high) {
  return (static_cast<std::uint64_t>(high) << 32) | low;
}

}  // namespace

std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    const std::uint64_t product0 = static_cast<std::uint64_t>(kPhiloxM0) * counter[0];
    const std::uint64_t product1 = static_cast<std::uint64_t>(kPhiloxM1) * counter[2];
    const auto hi0 = static_cast<std::uint32_t>(product0 >> 32), lo0 = static_cast<std::uint32_t>(product0);
    const auto hi1 = static_cast<std::uint32_t>(product1 >> 32), lo1 = static_cast<std::uint32_t>(product1);
    counter = {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
  }
  return counter;
}

double uniform(std::uint64_t seed, std::uint64_t index, int bits) {
  if (bits < 1) bits = 1;
  if (bits > 53) bits = 53;
  const auto block = philox_block(seed, index);
  const std::uint64_t word = join(block[0], block[1]) >> (64 - bits);
  return std::ldexp(static_cast<double>(word), -bits);
}

double normal(std::uint64_t seed, std::uint64_t index) {
  const auto block = philox_block(seed, index);
  // u1 in (0, 1] so that log(u1) is finite; u2 in [0, 1).
  const double u1 = std::ldexp(static_cast<double>((join(block[0], block[1]) >> 11) + 1), -53);
  const double u2 = std::ldexp(static_cast<double>(join(block[2], block[3]) >> 11), -53);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y == -1) return -std::numeric_limits<double>::infinity();
  // M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade (2011), single precision.
  double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    x = p * y;
  }
  // Newton on erf(x) = y: erf'(x) = 2/sqrt(pi) exp(-x^2).
  for (int step = 0; step < 2; ++step) {
    const double derivative = 2.0 * std::numbers::inv_sqrtpi * std::exp(-x * x);
    if (derivative == 0) break;
    x -= (std::erf(x) - y) / derivative;
  }
  return x;
}

}  // namespace flopscope
