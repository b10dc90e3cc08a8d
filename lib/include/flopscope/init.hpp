// Parameter initialization with PyTorch's definitions (torch.nn.init), on flopscope's
// reproducible generator (random.hpp): the same seed gives the same tensor on every platform,
// though not the values PyTorch's generator would give.
//
// The lecture's point: with w = randn(input_dim, output_dim), each output of x @ w (x standard
// normal) has standard deviation sqrt(input_dim); scaled by 1/sqrt(input_dim) ("Xavier" in the
// lecture's sense) it stays near 1 whatever input_dim; trunc_normal never leaves [a, b].
#pragma once

#include <cstdint>
#include <span>

#include "flopscope/tensor.hpp"

namespace flopscope {

struct Fans {
  std::int64_t fan_in = 0;
  std::int64_t fan_out = 0;
};

// torch.nn.init._calculate_fan_in_and_fan_out: for a weight of shape [out, in, k...],
// fan_in = in * prod(k...), fan_out = out * prod(k...). (PyTorch's convention is nn.Linear's
// [out_features, in_features]: for a w used as x @ w, of shape [in, out], the names swap.)
// ShapeError for fewer than 2 dimensions.
Fans calculate_fans(std::span<const std::int64_t> shape);

// N(mean, std^2) truncated to [a, b] by PyTorch's method (trunc_normal_): a uniform draw between
// the normal CDF at a and at b, mapped through the inverse CDF (erfinv), then clamped to [a, b].
// Every element lies in [a, b] after rounding to the dtype too (a rounded value beyond a bound is
// moved to the nearest representable value inside it).
Tensor trunc_normal(Shape shape, double mean, double std, double a, double b, std::uint64_t seed,
                    TensorOptions options = {});

// Xavier/Glorot (torch.nn.init.xavier_uniform_ / xavier_normal_), fans from calculate_fans:
// uniform on [-r, r] with r = gain * sqrt(6 / (fan_in + fan_out)); normal with
// std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_uniform(Shape shape, double gain, std::uint64_t seed, TensorOptions options = {});
Tensor xavier_normal(Shape shape, double gain, std::uint64_t seed, TensorOptions options = {});

// Mean and (population) standard deviation of every element, computed in double.
struct Moments {
  double mean = 0;
  double std = 0;
  double min = 0;
  double max = 0;
};
Moments moments(const Tensor& t);

}  // namespace flopscope
