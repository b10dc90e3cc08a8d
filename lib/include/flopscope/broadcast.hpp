// Broadcasting and the reference elementwise and matmul ops, with PyTorch's rules.
// Every reference op here walks its operands with StridedIterator (strided.hpp). FLOP and byte
// counts of these ops are in accounting.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/strided.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope {

// PyTorch's broadcast_shapes: align from the right; sizes must be equal or one of them 1 (a
// missing dimension counts as 1). ShapeError naming both shapes otherwise.
Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b);
Shape broadcast_shapes(std::span<const Shape> shapes);

// The dtype of a binary op on `a` and `b` (PyTorch's promotion among floating types: the wider;
// f16 with bf16 gives f32). ShapeError-free; throws std::invalid_argument for fp8 mixed with
// another dtype, as PyTorch refuses to promote fp8.
DType promote_types(DType a, DType b);

// Elementwise binary ops on broadcast operands: the result has the broadcast shape, row-major
// strides and the promoted dtype; each element is computed in double and rounded once (which,
// for + - * /, gives the correctly rounded result of the dtype). CPU or device operands (device
// ones round-trip through the host); the result lives on a's device.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }


// torch.matmul: 1-D operands are promoted to matrices (a row for the first, a column for the
// second) and the added dimension removed afterwards; batch dimensions broadcast. A plain triple
// loop accumulating in double: a reference, not a kernel.
Tensor matmul(const Tensor& a, const Tensor& b);
// What torch.matmul runs for operands of these shapes: (batch..., m, k) x (batch..., k, n), after
// promoting 1-D operands; ShapeError on mismatch.
struct MatmulGeometry {
  Shape batch;  // broadcast batch dimensions
  std::int64_t m = 1, k = 1, n = 1;
  Shape output;  // torch.matmul's output shape
};
MatmulGeometry matmul_geometry(std::span<const std::int64_t> a, std::span<const std::int64_t> b);

// The output shape of matmul, ShapeError on mismatch ("matmul: shapes [2, 3] and [4, 5] cannot be
// multiplied (3 != 4)").
Shape matmul_shape(std::span<const std::int64_t> a, std::span<const std::int64_t> b);

}  // namespace flopscope
