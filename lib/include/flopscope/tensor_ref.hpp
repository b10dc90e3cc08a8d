// TensorRef: what every kernel takes. A non-owning view of a tensor: data, dtype, sizes, strides
// (in elements: Note [strides count elements] in shape.hpp), storage offset and device, nothing
// more. A strided copy's source, a broadcast operand (stride 0) and a transposed matmul operand
// are each one TensorRef, so one kernel signature serves contiguous and strided work alike.
//
// It is a trivially copyable value of fixed size (at most kMaxDims dimensions), so it is passed
// by value to CUDA kernels as well. Views made here (transposed, permuted, ...) never copy.
// A Tensor gives one with Tensor::ref(); the bench harness gives one for each operand of a case.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "flopscope/device.hpp"
#include "flopscope/dtype.hpp"

namespace flopscope {

inline constexpr int kMaxDims = 8;

struct TensorRef {
  void* data = nullptr;  // the storage's element 0 (not element (0, ..., 0) of the view)
  DType dtype = DType::f32;
  int dims = 0;
  std::array<std::int64_t, kMaxDims> sizes{};
  std::array<std::int64_t, kMaxDims> strides{};  // in elements
  std::int64_t offset = 0;                        // in elements
  Device device{};

  // A row-major view of `sizes` at `data`. ShapeError for more than kMaxDims dimensions.
  static TensorRef contiguous(void* data, DType dtype, std::span<const std::int64_t> sizes,
                              Device device = Device::cpu());
  // Any view; ShapeError for more than kMaxDims dimensions, a stride < 0, or sizes and strides
  // of different lengths.
  static TensorRef strided(void* data, DType dtype, std::span<const std::int64_t> sizes,
                           std::span<const std::int64_t> strides, std::int64_t offset = 0,
                           Device device = Device::cpu());

  std::span<const std::int64_t> shape() const { return {sizes.data(), static_cast<std::size_t>(dims)}; }
  std::span<const std::int64_t> stride_list() const { return {strides.data(), static_cast<std::size_t>(dims)}; }
  std::int64_t numel() const;
  std::size_t element_size() const { return dtype_size(dtype); }
  bool is_contiguous() const;  // PyTorch's rule (size-1 dimensions ignored)
  // Address of element (0, ..., 0): data + offset elements.
  void* element_data() const { return static_cast<unsigned char*>(data) + offset * std::int64_t(element_size()); }
  template <class T>
  T* ptr() const {
    return static_cast<T*>(element_data());
  }
  // Storage elements from `data` that the view reaches: offset + sum (size - 1) * stride + 1; 0
  // for a view of no elements. What an allocation for it must hold (checked against overflow).
  std::int64_t storage_elements() const;

  // Views (no copy), as Tensor's: negative dimensions count from the end; ShapeError when out of range.
  TensorRef transposed(int dim0, int dim1) const;
  TensorRef permuted(std::span<const int> order) const;
  TensorRef with_dtype(DType other) const;  // the same elements read as another dtype of the same size

  // "f32[4095, 4097] strides [1, 4095] offset 0 on cpu"
  std::string str() const;
};

}  // namespace flopscope
