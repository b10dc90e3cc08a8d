#include "flopscope/predict.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace flopscope {

MatmulRates::MatmulRates(const std::vector<MatmulMeasurement>& measurements) {
  for (const auto& each : measurements) {
    if (!(each.flops_per_second > 0) || !std::isfinite(each.flops_per_second)) continue;  // nothing to time by
    auto same_shape = [&](const MatmulMeasurement& kept) {
      return kept.device == each.device && kept.dtype == each.dtype && kept.layout == each.layout &&
             kept.m == each.m && kept.n == each.n && kept.k == each.k;
    };
    auto kept = std::find_if(best_.begin(), best_.end(), same_shape);
    if (kept == best_.end()) best_.push_back(each);
    else if (each.flops_per_second > kept->flops_per_second) *kept = each;
    const std::pair<std::string, std::string> key{each.device, each.dtype};
    if (std::find(device_dtypes_.begin(), device_dtypes_.end(), key) == device_dtypes_.end())
      device_dtypes_.push_back(key);
  }
}

namespace {

double log_distance(const MatmulMeasurement& p, std::int64_t m, std::int64_t n, std::int64_t k) {
  auto axis = [](std::int64_t a, std::int64_t b) {
    return std::log2(static_cast<double>(a)) - std::log2(static_cast<double>(b));
  };
  return std::hypot(axis(p.m, m), axis(p.n, n), axis(p.k, k));
}

}  // namespace

RateEstimate MatmulRates::estimate(const std::string& device, const std::string& dtype, MatmulLayout layout,
                                   std::int64_t m, std::int64_t n, std::int64_t k) const {
  std::vector<const MatmulMeasurement*> same_layout, any_layout;
  for (const auto& p : best_) {
    if (p.device != device || p.dtype != dtype) continue;
    any_layout.push_back(&p);
    if (p.layout == layout) {
      if (p.m == m && p.n == n && p.k == k) return {p.flops_per_second, true, false, p.variant, 0};
      same_layout.push_back(&p);
    }
  }
  if (any_layout.empty()) throw std::invalid_argument("no matmul measured on " + device + " in " + dtype);
  // Note [matmul rate interpolation].
  std::vector<const MatmulMeasurement*>& pool = same_layout.empty() ? any_layout : same_layout;
  std::sort(pool.begin(), pool.end(), [&](const MatmulMeasurement* a, const MatmulMeasurement* b) {
    return log_distance(*a, m, n, k) < log_distance(*b, m, n, k);
  });
  const std::size_t used = std::min<std::size_t>(4, pool.size());
  if (log_distance(*pool[0], m, n, k) == 0)  // the same shape in another layout
    return {pool[0]->flops_per_second, false, true, pool[0]->variant, 1};
  double weights = 0, weighted = 0;
  for (std::size_t i = 0; i < used; ++i) {
    const double distance = log_distance(*pool[i], m, n, k);
    const double weight = 1 / (distance * distance);
    weights += weight;
    weighted += weight * pool[i]->flops_per_second;
  }
  return {weighted / weights, false, same_layout.empty(), pool[0]->variant, static_cast<int>(used)};
}

StepPrediction predict_step(std::span<const LayerAccount> layers, const MatmulRates& rates, const std::string& device,
                            const std::string& dtype) {
  StepPrediction prediction{.device = device, .dtype = dtype};
  for (const auto& layer : layers)
    for (const auto& op : layer.ops)
      for (const auto& shape : op.matmuls) {
        prediction.matmul_flops = checked_add<Count128>(prediction.matmul_flops, shape.flops(), "matmul FLOPs");
        auto same = [&](const PredictedMatmul& p) {
          return p.pass == op.pass && p.layer_kind == layer.kind && p.shape == shape;
        };
        auto found = std::find_if(prediction.matmuls.begin(), prediction.matmuls.end(), same);
        if (found != prediction.matmuls.end()) {
          ++found->count;
          continue;
        }
        PredictedMatmul row{.layer_kind = layer.kind, .shape = shape, .pass = op.pass, .count = 1,
                            .rate = rates.estimate(device, dtype, shape.layout, shape.m, shape.n, shape.k)};
        (row.rate.measured ? prediction.measured_shapes : prediction.interpolated_shapes) += 1;
        prediction.matmuls.push_back(std::move(row));
      }
  for (auto& row : prediction.matmuls) {
    const double flops = static_cast<double>(checked_mul<Count128>(row.shape.flops(), row.count, "matmul FLOPs"));
    row.seconds = flops / row.rate.flops_per_second;
    (row.pass == Pass::forward ? prediction.forward_seconds : prediction.backward_seconds) += row.seconds;
  }
  return prediction;
}

}  // namespace flopscope
