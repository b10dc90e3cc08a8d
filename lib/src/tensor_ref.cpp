#include "flopscope/tensor_ref.hpp"

#include <algorithm>
#include <vector>

#include "flopscope/checked.hpp"
#include "flopscope/shape.hpp"

namespace flopscope {

namespace {

void check_dims(std::size_t dims, const char* operation) {
  if (dims > static_cast<std::size_t>(kMaxDims))
    throw ShapeError(std::string("TensorRef::") + operation + ": " + std::to_string(dims) +
                     " dimensions (at most " + std::to_string(kMaxDims) + ")");
}

int wrap_dim(int dim, int dims, const char* operation) {
  const int wrapped = dim < 0 ? dim + dims : dim;
  if (wrapped < 0 || wrapped >= dims)
    throw ShapeError(std::string("TensorRef::") + operation + ": dimension " + std::to_string(dim) +
                     " out of range for " + std::to_string(dims) + " dimensions");
  return wrapped;
}

}  // namespace

TensorRef TensorRef::contiguous(void* data, DType dtype, std::span<const std::int64_t> sizes, Device device) {
  const Strides strides = contiguous_strides(sizes);
  return strided(data, dtype, sizes, strides, 0, device);
}

TensorRef TensorRef::strided(void* data, DType dtype, std::span<const std::int64_t> sizes,
                             std::span<const std::int64_t> strides, std::int64_t offset, Device device) {
  check_dims(sizes.size(), "strided");
  if (strides.size() != sizes.size())
    throw ShapeError("TensorRef::strided: sizes " + shape_str(sizes) + " and strides " + shape_str(strides) +
                     " differ in length");
  TensorRef ref;
  ref.data = data;
  ref.dtype = dtype;
  ref.dims = static_cast<int>(sizes.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0)
      throw ShapeError("TensorRef::strided: negative size or stride in " + shape_str(sizes) + " / " + shape_str(strides));
    ref.sizes[d] = sizes[d];
    ref.strides[d] = strides[d];
  }
  if (offset < 0) throw ShapeError("TensorRef::strided: negative offset " + std::to_string(offset));
  ref.offset = offset;
  ref.device = device;
  return ref;
}

std::int64_t TensorRef::numel() const { return checked_numel(shape(), "TensorRef::numel"); }

bool TensorRef::is_contiguous() const { return flopscope::is_contiguous(shape(), stride_list()); }

std::int64_t TensorRef::storage_elements() const {
  if (numel() == 0) return 0;
  std::int64_t last = offset;
  for (int d = 0; d < dims; ++d)
    last = checked_add(last, checked_mul(sizes[d] - 1, strides[d], "TensorRef storage"), "TensorRef storage");
  return checked_add<std::int64_t>(last, 1, "TensorRef storage");
}

TensorRef TensorRef::transposed(int dim0, int dim1) const {
  TensorRef out = *this;
  const int a = wrap_dim(dim0, dims, "transposed"), b = wrap_dim(dim1, dims, "transposed");
  std::swap(out.sizes[a], out.sizes[b]);
  std::swap(out.strides[a], out.strides[b]);
  return out;
}

TensorRef TensorRef::permuted(std::span<const int> order) const {
  if (static_cast<int>(order.size()) != dims)
    throw ShapeError("TensorRef::permuted: " + std::to_string(order.size()) + " dimensions given for a view of " +
                     std::to_string(dims));
  TensorRef out = *this;
  std::vector<bool> seen(static_cast<std::size_t>(dims), false);
  for (int d = 0; d < dims; ++d) {
    const int from = wrap_dim(order[static_cast<std::size_t>(d)], dims, "permuted");
    if (seen[static_cast<std::size_t>(from)])
      throw ShapeError("TensorRef::permuted: dimension " + std::to_string(from) + " repeated");
    seen[static_cast<std::size_t>(from)] = true;
    out.sizes[d] = sizes[from];
    out.strides[d] = strides[from];
  }
  return out;
}

TensorRef TensorRef::with_dtype(DType other) const {
  if (dtype_size(other) != dtype_size(dtype))
    throw ShapeError("TensorRef::with_dtype: " + std::string(dtype_name(dtype)) + " and " +
                     std::string(dtype_name(other)) + " differ in size");
  TensorRef out = *this;
  out.dtype = other;
  return out;
}

std::string TensorRef::str() const {
  return std::string(dtype_name(dtype)) + shape_str(shape()) + " strides " + shape_str(stride_list()) + " offset " +
         std::to_string(offset) + " on " + device.str();
}

}  // namespace flopscope
