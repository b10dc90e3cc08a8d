// Step-time prediction from measured matmuls: for each matmul of a model's training step
// (model.hpp), the rate that a run measured at that shape, or one interpolated from the shapes it
// did measure, and from those the forward, backward and step time and the MFU they imply.
//
// Note [matmul rate interpolation]: measurements are kept per device, dtype and layout; at one
// shape the best variant's rate counts (the fastest that ran). A shape that was measured takes its
// rate. Otherwise the rate is the inverse-distance-weighted mean (weights 1/distance²) of the rates
// of the (up to) 4 nearest measured shapes of the same layout, distance measured between
// (log2 m, log2 n, log2 k); with no shape of that layout measured, the other layouts' shapes are
// used, and the estimate says so. Beyond the measured range this holds the nearest rates (it does
// not extrapolate). A bmm of `batch` matrices is timed as batch x one matrix at its shape's rate:
// batched kernels usually do better on small matrices, so attention's time is an upper bound.
// Only matmuls are timed: elementwise ops, softmax, norms and the optimizer step are not, so the
// predicted step is a lower bound on a real one and the predicted MFU an upper bound.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "flopscope/flop_counter.hpp"
#include "flopscope/model.hpp"

namespace flopscope {

struct MatmulMeasurement {
  std::string device, dtype, variant;  // "cuda:0", "bf16", "cublas"
  MatmulLayout layout = MatmulLayout::NN;
  std::int64_t m = 0, n = 0, k = 0;
  double flops_per_second = 0;
};

struct RateEstimate {
  double flops_per_second = 0;
  bool measured = false;      // this very shape and layout was measured
  bool other_layout = false;  // interpolated from another layout's shapes (none of its own)
  std::string variant;        // measured: the best variant; interpolated: the nearest shape's
  int neighbours = 0;         // interpolated: how many shapes were weighed
};

class MatmulRates {
 public:
  explicit MatmulRates(const std::vector<MatmulMeasurement>& measurements);
  // Every (device, dtype) measured, in first-seen order.
  const std::vector<std::pair<std::string, std::string>>& device_dtypes() const { return device_dtypes_; }
  // std::invalid_argument when nothing was measured for that device and dtype.
  RateEstimate estimate(const std::string& device, const std::string& dtype, MatmulLayout layout, std::int64_t m,
                        std::int64_t n, std::int64_t k) const;
  // The best measurement per shape (device, dtype, layout, m, n, k).
  const std::vector<MatmulMeasurement>& best() const { return best_; }

 private:
  std::vector<MatmulMeasurement> best_;
  std::vector<std::pair<std::string, std::string>> device_dtypes_;
};

// One distinct matmul of the step, how often the step runs it, and its predicted time.
struct PredictedMatmul {
  std::string layer_kind;  // the LayerAccount's kind: "attention", "ffn", ...
  MatmulShape shape;
  Pass pass = Pass::forward;
  std::int64_t count = 0;  // occurrences in the step (layers x ...)
  RateEstimate rate;
  double seconds = 0;  // all `count` of them
};

struct StepPrediction {
  std::string device, dtype;
  std::vector<PredictedMatmul> matmuls;  // in the order of first occurrence
  double forward_seconds = 0, backward_seconds = 0;
  Count128 matmul_flops = 0;  // of the timed matmuls (fused attention's recomputed scores included)
  int measured_shapes = 0, interpolated_shapes = 0;
  double step_seconds() const { return forward_seconds + backward_seconds; }
};

// The step of these layers (a ModelAccount's, or deep_linear_mlp's).
StepPrediction predict_step(std::span<const LayerAccount> layers, const MatmulRates& rates, const std::string& device,
                            const std::string& dtype);

}  // namespace flopscope
