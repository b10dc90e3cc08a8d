// Broadcasting and the reference elementwise and matmul ops, with PyTorch's rules.
//
// StridedIterator is THE strided N-d walk of the library: every reference op that touches
// elements of strided tensors (copies, elementwise ops, reductions, einsum) goes through it, and it
// is what the broadcast kernels are checked against.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "flopscope/tensor.hpp"

namespace flopscope {

// PyTorch's broadcast_shapes: align from the right; sizes must be equal or one of them 1 (a
// missing dimension counts as 1). ShapeError naming both shapes otherwise.
Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b);
Shape broadcast_shapes(std::span<const Shape> shapes);

// Walks every index of `shape` in row-major order (the last index fastest), keeping for each
// operand the storage element offset of that index: offsets[k] + sum_d index[d] * strides[k][d].
// A stride of 0 (an expanded dimension) keeps the offset, so broadcast operands are read in place.
//
//   for (StridedIterator it(shape, {a.strides(), b.strides()}, {a.storage_offset(), b.storage_offset()});
//        !it.done(); it.next())
//     use(it.offset(0), it.offset(1));
class StridedIterator {
 public:
  StridedIterator(Shape shape, std::vector<Strides> strides, std::vector<std::int64_t> offsets);
  // Operands that all have one shape (broadcast them first: broadcast_to).
  explicit StridedIterator(std::span<const Tensor> operands);

  bool done() const { return done_; }
  std::int64_t offset(std::size_t operand) const { return offsets_[operand]; }
  const Shape& index() const { return index_; }
  void next();

 private:
  Shape shape_;
  std::vector<Strides> strides_;
  std::vector<std::int64_t> offsets_;
  Shape index_;
  bool done_ = false;
};

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

// One FLOP per output element (DESIGN.md: elementwise ops are counted on their own).
std::int64_t elementwise_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b);
// Fewest bytes: each input element read once (a broadcast operand once, not per output element)
// and each output element written once.
std::int64_t elementwise_bytes(std::span<const std::int64_t> a, std::span<const std::int64_t> b, DType dtype);

// torch.matmul: 1-D operands are promoted to matrices (a row for the first, a column for the
// second) and the added dimension removed afterwards; batch dimensions broadcast. A plain triple
// loop accumulating in double: a reference, not a kernel.
Tensor matmul(const Tensor& a, const Tensor& b);
// The output shape of matmul, ShapeError on mismatch ("matmul: shapes [2, 3] and [4, 5] cannot be
// multiplied (3 != 4)").
Shape matmul_shape(std::span<const std::int64_t> a, std::span<const std::int64_t> b);
// 2 * batch * m * k * n: torch.utils.flop_counter's count for the bmm/mm that torch.matmul runs
// (batch = product of the broadcast batch dimensions). For 1-D operands, m or n is 1 (PyTorch runs
// dot/mv there, which its flop counter does not count).
std::int64_t matmul_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b);

}  // namespace flopscope
