// The strided N-d walk of the library: every reference op that touches elements of strided
// tensors (Tensor::copy_, elementwise ops, reductions, einsum) goes through it, and it is what
// the strided and broadcast kernels are checked against. It knows shapes and strides only
// (shape.hpp), nothing of tensors; strided_iterator(tensors) in tensor.hpp builds one from tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "flopscope/shape.hpp"

namespace flopscope {

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

}  // namespace flopscope
