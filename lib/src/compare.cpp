#include "flopscope/compare.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "flopscope/numerics.hpp"
#include "flopscope/shape.hpp"
#include "flopscope/strided.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope {

namespace {

constexpr int kShown = 3;  // mismatches named in a message

const unsigned char* element(const TensorRef& t, std::int64_t offset) {
  return static_cast<const unsigned char*>(t.data) + offset * std::int64_t(t.element_size());
}

std::string index_str(const Shape& index) { return shape_str(index); }

std::string value_str(const unsigned char* address, DType dtype) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", load_element(address, dtype));
  return text;
}

void check_same_shape(const TensorRef& out, const TensorRef& expected, const char* what) {
  if (out.dims != expected.dims || !std::equal(out.shape().begin(), out.shape().end(), expected.shape().begin()))
    throw ShapeError(std::string(what) + ": shapes " + shape_str(out.shape()) + " and " +
                     shape_str(expected.shape()) + " differ");
}

StridedIterator walk(const TensorRef& a, const TensorRef& b) {
  const auto strides = [](const TensorRef& t) { return Strides(t.stride_list().begin(), t.stride_list().end()); };
  return StridedIterator(Shape(a.shape().begin(), a.shape().end()), {strides(a), strides(b)}, {a.offset, b.offset});
}

std::string summary(std::int64_t mismatches, std::int64_t count, const std::string& shown) {
  return std::to_string(mismatches) + " of " + std::to_string(count) + " elements differ (" + shown + ")";
}

}  // namespace

Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64: return {1e-7, 1e-7};
    case DType::f32: return {1e-5, 1.3e-6};
    case DType::f16: return {1e-5, 1e-3};
    case DType::bf16: return {1e-5, 1.6e-2};
    case DType::f8e4m3:
    case DType::f8e5m2: return {1e-5, dtype_info(dtype).epsilon};
  }
  return {};
}

double unit_roundoff(DType dtype) { return dtype_info(dtype).epsilon / 2; }

Tolerance accumulation_tolerance(DType operands, DType accumulate, DType output, std::int64_t k, bool inputs_rounded) {
  double rtol = double(k) * unit_roundoff(accumulate) + unit_roundoff(output);
  if (!inputs_rounded) rtol += 2 * unit_roundoff(operands);
  return {0, rtol};
}

std::optional<std::string> compare_exact(const void* out, const void* expected, std::size_t count,
                                         std::size_t element_size) {
  if (count == 0 || std::memcmp(out, expected, count * element_size) == 0) return std::nullopt;
  const auto* a = static_cast<const unsigned char*>(out);
  const auto* b = static_cast<const unsigned char*>(expected);
  std::string shown;
  std::int64_t mismatches = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * element_size, b + i * element_size, element_size) == 0) continue;
    if (mismatches++ < kShown) shown += (shown.empty() ? "" : ", ") + std::string("element ") + std::to_string(i);
  }
  return summary(mismatches, std::int64_t(count), shown);
}

std::optional<std::string> compare_exact(const TensorRef& out, const TensorRef& expected) {
  check_same_shape(out, expected, "compare_exact");
  if (out.dtype != expected.dtype)
    throw ShapeError("compare_exact: dtypes " + std::string(dtype_name(out.dtype)) + " and " +
                     std::string(dtype_name(expected.dtype)) + " differ");
  const std::size_t size = out.element_size();
  if (out.is_contiguous() && expected.is_contiguous())
    return compare_exact(out.element_data(), expected.element_data(), std::size_t(out.numel()), size);
  std::string shown;
  std::int64_t mismatches = 0;
  for (StridedIterator it = walk(out, expected); !it.done(); it.next()) {
    const unsigned char *a = element(out, it.offset(0)), *b = element(expected, it.offset(1));
    if (std::memcmp(a, b, size) == 0) continue;
    if (mismatches++ < kShown)
      shown += (shown.empty() ? "" : ", ") + index_str(it.index()) + " " + value_str(a, out.dtype) + " vs " +
               value_str(b, expected.dtype);
  }
  if (mismatches == 0) return std::nullopt;
  return summary(mismatches, out.numel(), shown);
}

std::optional<std::string> compare_close(const TensorRef& out, const TensorRef& expected, Tolerance tolerance,
                                         const TensorRef* scale) {
  check_same_shape(out, expected, "compare_close");
  if (scale) check_same_shape(out, *scale, "compare_close (scale)");
  const Shape shape(out.shape().begin(), out.shape().end());
  std::vector<Strides> strides = {Strides(out.stride_list().begin(), out.stride_list().end()),
                                  Strides(expected.stride_list().begin(), expected.stride_list().end())};
  std::vector<std::int64_t> offsets = {out.offset, expected.offset};
  if (scale) {
    strides.emplace_back(scale->stride_list().begin(), scale->stride_list().end());
    offsets.push_back(scale->offset);
  }
  std::string shown;
  std::int64_t mismatches = 0;
  for (StridedIterator it(shape, strides, offsets); !it.done(); it.next()) {
    const double a = load_element(element(out, it.offset(0)), out.dtype);
    const double b = load_element(element(expected, it.offset(1)), expected.dtype);
    bool close;
    if (std::isnan(a) || std::isnan(b)) {
      close = std::isnan(a) && std::isnan(b);
    } else if (std::isinf(a) || std::isinf(b)) {
      close = a == b;
    } else {
      const double basis = scale ? std::fabs(load_element(element(*scale, it.offset(2)), scale->dtype)) : std::fabs(b);
      close = std::fabs(a - b) <= tolerance.atol + tolerance.rtol * basis;
    }
    if (close) continue;
    if (mismatches++ < kShown) {
      char text[160];
      std::snprintf(text, sizeof text, " %.9g vs %.9g (|diff| %.3g)", a, b, std::fabs(a - b));
      shown += (shown.empty() ? "" : ", ") + index_str(it.index()) + text;
    }
  }
  if (mismatches == 0) return std::nullopt;
  char bound[96];
  std::snprintf(bound, sizeof bound, "; atol %.3g, rtol %.3g of %s", tolerance.atol, tolerance.rtol,
                scale ? "the scale" : "|expected|");
  return summary(mismatches, out.numel(), shown + bound);
}

ErrorStats error_stats(const TensorRef& out, const TensorRef& expected, const TensorRef* scale) {
  check_same_shape(out, expected, "error_stats");
  if (scale) check_same_shape(out, *scale, "error_stats (scale)");
  const Shape shape(out.shape().begin(), out.shape().end());
  std::vector<Strides> strides = {Strides(out.stride_list().begin(), out.stride_list().end()),
                                  Strides(expected.stride_list().begin(), expected.stride_list().end())};
  std::vector<std::int64_t> offsets = {out.offset, expected.offset};
  if (scale) {
    strides.emplace_back(scale->stride_list().begin(), scale->stride_list().end());
    offsets.push_back(scale->offset);
  }
  ErrorStats stats;
  double sum_rel = 0;
  for (StridedIterator it(shape, strides, offsets); !it.done(); it.next()) {
    const double a = load_element(element(out, it.offset(0)), out.dtype);
    const double b = load_element(element(expected, it.offset(1)), expected.dtype);
    const double basis = scale ? std::fabs(load_element(element(*scale, it.offset(2)), scale->dtype)) : std::fabs(b);
    if (!std::isfinite(a) || !std::isfinite(b) || basis == 0) continue;
    const double abs_error = std::fabs(a - b), rel_error = abs_error / basis;
    stats.max_abs = std::max(stats.max_abs, abs_error);
    stats.max_rel = std::max(stats.max_rel, rel_error);
    sum_rel += rel_error;
    ++stats.count;
  }
  stats.mean_rel = stats.count ? sum_rel / double(stats.count) : 0;
  return stats;
}

}  // namespace flopscope
