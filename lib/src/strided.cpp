#include "flopscope/strided.hpp"

#include <string>

namespace flopscope {

StridedIterator::StridedIterator(Shape shape, std::vector<Strides> strides, std::vector<std::int64_t> offsets)
    : shape_(std::move(shape)), strides_(std::move(strides)), offsets_(std::move(offsets)), index_(shape_.size(), 0) {
  if (strides_.size() != offsets_.size())
    throw ShapeError("StridedIterator: " + std::to_string(strides_.size()) + " stride lists but " +
                     std::to_string(offsets_.size()) + " offsets");
  for (const auto& s : strides_)
    if (s.size() != shape_.size())
      throw ShapeError("StridedIterator: strides " + shape_str(s) + " do not match the shape " + shape_str(shape_));
  done_ = shape_numel(shape_) == 0;
}

void StridedIterator::next() {
  for (std::size_t d = shape_.size(); d-- > 0;) {
    ++index_[d];
    for (std::size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][d];
    if (index_[d] < shape_[d]) return;
    for (std::size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][d] * shape_[d];
    index_[d] = 0;
  }
  done_ = true;  // wrapped around every dimension (or a 0-d shape: its one element is done)
}

}  // namespace flopscope
