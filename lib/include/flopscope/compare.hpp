// Comparing a result with its reference: the one place where "equal" and "close enough" are
// decided, for the bench harness's validation and the tests alike (STYLE.md lesson 4).
//
// - compare_exact: bit for bit per element (NaN payloads and signed zeros included): copies,
//   conversions, and anything computed exactly.
// - compare_close: |out - ref| <= atol + rtol·scale, where scale is |ref|, or, for a sum of
//   products, the matching element of a scale tensor (Σ|a·b|: the classic bound of a dot
//   product, which a cancelling sum needs). NaN matches NaN; a NaN or inf on one side only is a
//   mismatch. Tolerances: torch.testing.assert_close's per-dtype defaults, or
//   accumulation_tolerance(), which grows with the length of a reduction.
//
// Each returns nullopt when the tensors agree, else one line naming how many elements differ and
// the first few, with their indices and both values. Operands are host TensorRefs of one shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "flopscope/dtype.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// torch.testing.assert_close's defaults (rtol, atol): f64 1e-7, 1e-7; f32 1.3e-6, 1e-5;
// f16 1e-3, 1e-5; bf16 1.6e-2, 1e-5; fp8 (not in PyTorch's table) their epsilon, 1e-5.
Tolerance default_tolerance(DType dtype);

// The bound for a sum of k products of `operands` elements accumulated in `accumulate` and
// rounded once to `output`, relative to the sum of |products| (pass that as compare_close's
// scale): rtol = k·u(accumulate) + u(output) + 2·u(operands) when the reference saw the
// unrounded inputs (inputs_rounded = false), without the last term when it saw the same rounded
// inputs. u is the unit roundoff (half the epsilon). The worst case, never a fixed tolerance
// that hides a bug: a result off by one unit in the last place of `output` in every product
// exceeds it.
Tolerance accumulation_tolerance(DType operands, DType accumulate, DType output, std::int64_t k,
                                 bool inputs_rounded = true);

// The unit roundoff of a dtype: 2^-(mantissa bits + 1) (f32: 2^-24, bf16: 2^-8).
double unit_roundoff(DType dtype);

std::optional<std::string> compare_exact(const TensorRef& out, const TensorRef& expected);
// Raw arrays of `count` elements of `element_size` bytes.
std::optional<std::string> compare_exact(const void* out, const void* expected, std::size_t count,
                                         std::size_t element_size);

std::optional<std::string> compare_close(const TensorRef& out, const TensorRef& expected, Tolerance tolerance,
                                         const TensorRef* scale = nullptr);

// Errors of `out` against `expected` over the finite elements whose basis is not 0: the basis is
// |expected|, or the matching element of `scale` where given (for a sum of products, Σ|a·b|: a
// cancelling sum's tiny result then does not turn a small absolute error into a huge relative one).
struct ErrorStats {
  double max_abs = 0;   // max |out - expected|
  double max_rel = 0;   // max |out - expected| / basis
  double mean_rel = 0;  // mean of the same
  std::int64_t count = 0;  // elements compared
};
ErrorStats error_stats(const TensorRef& out, const TensorRef& expected, const TensorRef* scale = nullptr);

}  // namespace flopscope
