#include "flopscope/init.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "flopscope/checked.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/random.hpp"

namespace flopscope {

Fans calculate_fans(std::span<const std::int64_t> shape) {
  if (shape.size() < 2)
    throw ShapeError("calculate_fans(" + shape_str(shape) +
                     "): Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  std::int64_t receptive_field = 1;
  for (std::size_t d = 2; d < shape.size(); ++d) receptive_field = checked_mul(receptive_field, shape[d], "fans");
  return {checked_mul(shape[1], receptive_field, "fan_in"), checked_mul(shape[0], receptive_field, "fan_out")};
}

namespace {

// Fills a new CPU tensor with value_of(i) for row-major element i, each rounded to the dtype and
// kept within [low, high], then moves it to the device.
template <typename ValueOf>
Tensor generate_within(Shape shape, TensorOptions options, double low, double high, ValueOf value_of) {
  Tensor host = empty(std::move(shape), {options.dtype, Device::cpu()});
  auto* base = static_cast<std::byte*>(host.data_ptr());
  const auto size = static_cast<std::int64_t>(host.element_size());
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    std::byte* address = base + i * size;
    store_element(address, options.dtype, std::clamp(value_of(i), low, high));
    const double stored = load_element(address, options.dtype);
    if (stored > high || stored < low) {
      // Rounding crossed a bound that the dtype cannot represent: step one ulp back inside.
      const double target = stored > high ? high : low;
      double inside = stored;
      for (int step = 0; step < 4 && (inside > high || inside < low); ++step) {
        store_element(address, options.dtype, std::nextafter(inside, target == high ? -HUGE_VAL : HUGE_VAL));
        const double next = load_element(address, options.dtype);
        if (next == inside) {  // the double step was absorbed by rounding: step the bits instead
          const std::uint64_t bits = encode_bits(options.dtype, inside);
          const bool toward_zero = (inside > high) == (inside > 0);
          const std::uint64_t moved = toward_zero ? bits - 1 : bits + 1;
          store_element(address, options.dtype, decode_bits(options.dtype, moved));
        }
        inside = load_element(address, options.dtype);
      }
    }
  }
  return host.to(options.device);
}

}  // namespace

Tensor trunc_normal(Shape shape, double mean, double std, double a, double b, std::uint64_t seed, TensorOptions options) {
  if (!(std > 0) || !(a < b))
    throw std::invalid_argument("trunc_normal: needs std > 0 and a < b (got std " + std::to_string(std) + ", [" +
                                std::to_string(a) + ", " + std::to_string(b) + "])");
  auto normal_cdf = [](double x) { return (1.0 + std::erf(x / std::numbers::sqrt2)) / 2.0; };
  const double low = normal_cdf((a - mean) / std), high = normal_cdf((b - mean) / std);
  return generate_within(std::move(shape), options, a, b, [=](std::int64_t i) {
    const double u = uniform(seed, static_cast<std::uint64_t>(i));
    const double y = 2.0 * (low + (high - low) * u) - 1.0;  // uniform on [2 low - 1, 2 high - 1)
    return mean + std * std::numbers::sqrt2 * erfinv(y);
  });
}

Tensor xavier_uniform(Shape shape, double gain, std::uint64_t seed, TensorOptions options) {
  const Fans fans = calculate_fans(shape);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  return generate_within(std::move(shape), options, -bound, bound, [=](std::int64_t i) {
    return (2.0 * uniform(seed, static_cast<std::uint64_t>(i)) - 1.0) * bound;
  });
}

Tensor xavier_normal(Shape shape, double gain, std::uint64_t seed, TensorOptions options) {
  const Fans fans = calculate_fans(shape);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fans.fan_in + fans.fan_out));
  return generate_within(std::move(shape), options, -HUGE_VAL, HUGE_VAL,
                         [=](std::int64_t i) { return std * normal(seed, static_cast<std::uint64_t>(i)); });
}

Moments moments(const Tensor& t) {
  const std::vector<double> values = t.to_vector();
  Moments m;
  if (values.empty()) {
    m.mean = m.std = m.min = m.max = std::numeric_limits<double>::quiet_NaN();
    return m;
  }
  double sum = 0;
  m.min = m.max = values[0];
  for (double v : values) {
    sum += v;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  m.mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - m.mean) * (v - m.mean);
  m.std = std::sqrt(squares / static_cast<double>(values.size()));
  return m;
}

}  // namespace flopscope
