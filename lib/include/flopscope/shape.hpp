// Shapes and strides as PyTorch has them, as plain functions of sizes and strides (c10's
// Contiguity.h, ggml's ggml_is_contiguous). Tensor (tensor.hpp) and TensorRef (tensor_ref.hpp)
// both build on these.
//
// Note [strides count elements]: strides and storage offsets are in ELEMENTS, never bytes, as in
// PyTorch. Element (i0, i1, ...) lives at storage element
//     storage_offset + i0 * stride[0] + i1 * stride[1] + ...
// Strides are never negative; a stride of 0 is a broadcast (expand) dimension.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace flopscope {

using Shape = std::vector<std::int64_t>;    // sizes, one per dimension
using Strides = std::vector<std::int64_t>;  // in elements (Note [strides count elements])

// A shape or stride error: the message names the operation and the shapes.
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// "[2, 3, 4]"; "[]" for a 0-d tensor.
std::string shape_str(std::span<const std::int64_t> sizes);
// Product of the sizes (1 for a 0-d shape): checked_numel (SizeOverflow where it overflows int64).
std::int64_t shape_numel(std::span<const std::int64_t> sizes);
// Row-major ("C-contiguous") strides of a shape, as PyTorch computes them (a size-0 or size-1
// dimension counts as 1 for the strides of the dimensions before it).
Strides contiguous_strides(std::span<const std::int64_t> sizes);
// PyTorch's is_contiguous: dimensions of size 1 are ignored; a tensor with no elements is contiguous.
bool is_contiguous(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides);
// c10's is_non_overlapping_and_dense: the elements fill a span of exactly numel storage elements,
// in some order of dimensions (a transpose of a contiguous tensor is; a slice with a step is not).
bool is_non_overlapping_and_dense(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides);
// The strides that view(new_shape) gives a tensor of (old_shape, old_strides), or nullopt where no
// view exists: PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp).
std::optional<Strides> compute_view_strides(std::span<const std::int64_t> old_shape,
                                            std::span<const std::int64_t> old_strides,
                                            std::span<const std::int64_t> new_shape);
// Replaces one -1 in `shape` by what makes it hold `numel` elements (PyTorch's infer_size).
// `operation` names the caller in the error message.
Shape infer_shape(std::span<const std::int64_t> shape, std::int64_t numel, std::string_view operation);

}  // namespace flopscope
