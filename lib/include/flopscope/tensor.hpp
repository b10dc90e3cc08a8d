// Tensors with PyTorch's semantics: a tensor is dtype + shape + strides + storage offset + storage,
// on a device. Nothing more.
//
// Strides and the storage offset count ELEMENTS, never bytes (Note [strides count elements] in
// shape.hpp).
//
// Views never copy: select/index, slice, view, transpose, permute, squeeze/unsqueeze,
// flatten/unflatten (when a view exists), expand/broadcast_to and as_strided return a new
// shape/strides/offset over the SAME storage, so a write through one is seen through all. reshape,
// flatten and contiguous copy only when no view exists (as in PyTorch); same_storage tells.
//
// A Tensor is a handle (like torch::Tensor): copying it copies the handle, not the data, and
// writing methods (set, fill_, copy_) are const because they change the elements, not the handle.
//
// Elements of every dtype are read and written as double: f64/f32 directly, the others through
// flopscope::encode_bits/decode_bits (numerics.hpp), rounding to nearest even.
//
// Every shape or stride error throws flopscope::ShapeError whose message names the operation and
// the shapes, e.g. "view([2, 3]) of a tensor of shape [3, 2] and strides [1, 3]: view size is not
// compatible with input tensor's size and stride (...)".
//
// Storage lives on a device through a StorageAllocator. The CPU one is built in; lib/ knows
// nothing of device runtimes, so the CUDA one lives in kernels/ (flopscope::kernels::cuda::
// register_tensor_storage()). Element access on a device tensor copies the element to the host;
// computations (contiguous copies, elementwise ops) on device tensors round-trip through the host:
// they are references, not kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "flopscope/device.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/shape.hpp"
#include "flopscope/strided.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope {

// One element of `dtype` at a host address, as double (reading) or rounded to nearest even from
// double (writing; overflow as encode_bits without saturation).
double load_element(const void* address, DType dtype);
void store_element(void* address, DType dtype, double value);

// ---- storage ---------------------------------------------------------------------------------

// Memory on one kind of device. Implementations must be thread-safe.
class StorageAllocator {
 public:
  virtual ~StorageAllocator() = default;
  // Throws (with the reason) where the device cannot be used. `bytes` may be 0.
  virtual void* allocate(std::size_t bytes, int device_index) = 0;
  virtual void deallocate(void* data, std::size_t bytes, int device_index) noexcept = 0;
  virtual void copy_to_host(void* host_destination, const void* device_source, std::size_t bytes,
                            int device_index) = 0;
  virtual void copy_from_host(void* device_destination, const void* host_source, std::size_t bytes,
                              int device_index) = 0;
};

// Registers the allocator for one kind of device (the CPU one is built in; registering another
// replaces it). Storage already allocated keeps the allocator it was allocated with.
void set_storage_allocator(Device::Kind kind, std::shared_ptr<StorageAllocator> allocator);
// The registered allocator, or nullptr.
std::shared_ptr<StorageAllocator> storage_allocator(Device::Kind kind);

// One allocation on one device, shared by every view of it. CPU storage is 64-byte aligned and
// not initialized.
class Storage {
 public:
  Storage(std::size_t bytes, Device device);  // throws where `device` has no usable allocator
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  std::shared_ptr<StorageAllocator> allocator_;
};

// ---- tensor ----------------------------------------------------------------------------------

// A slice of one dimension as Python writes it: start:stop:step, each optional; negative start
// and stop count from the end; out-of-range values clamp as in Python; step > 0.
struct Slice {
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> stop;
  std::int64_t step = 1;
};
// Python's `...` in an index.
struct Ellipsis {};
// One entry of x.index({...}): an integer (removes the dimension), a Slice, or an Ellipsis.
using TensorIndex = std::variant<std::int64_t, Slice, Ellipsis>;

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  // The general constructor: a view of `storage` (used by factories and views).
  Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Strides strides, std::int64_t storage_offset);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const;
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  std::int64_t storage_offset() const { return offset_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::int64_t size(std::int64_t dim) const;    // negative dims count from the end
  std::int64_t stride(std::int64_t dim) const;
  std::size_t element_size() const { return dtype_size(dtype_); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // Address of element (0, 0, ...): storage data + storage_offset elements.
  void* data_ptr() const;
  // The non-owning view that kernels take (tensor_ref.hpp); valid while this tensor's storage lives.
  TensorRef ref() const;

  bool is_contiguous() const { return flopscope::is_contiguous(shape_, strides_); }
  bool is_non_overlapping_and_dense() const { return flopscope::is_non_overlapping_and_dense(shape_, strides_); }
  // True when both tensors are views of one storage (PyTorch: same untyped_storage().data_ptr()).
  bool same_storage(const Tensor& other) const;

  // ---- elements (as double) ----
  double item() const;  // a tensor of one element
  double at(std::span<const std::int64_t> index) const;
  double at(std::initializer_list<std::int64_t> index) const { return at(std::span(index.begin(), index.size())); }
  void set(std::span<const std::int64_t> index, double value) const;
  void set(std::initializer_list<std::int64_t> index, double value) const {
    set(std::span(index.begin(), index.size()), value);
  }
  // Every element, in row-major order of the shape (not of the storage).
  std::vector<double> to_vector() const;
  const Tensor& fill_(double value) const;
  // Copies `source` (broadcast to this shape, any dtype, any device) into this tensor's elements.
  const Tensor& copy_(const Tensor& source) const;

  // ---- views (never copy) ----
  Tensor operator[](std::int64_t index) const { return select(0, index); }  // x[i]
  Tensor select(std::int64_t dim, std::int64_t index) const;                 // removes `dim`
  Tensor slice(std::int64_t dim, std::optional<std::int64_t> start = std::nullopt,
               std::optional<std::int64_t> stop = std::nullopt, std::int64_t step = 1) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  // x[i, :, 1:3, ...] as x.index({i, Slice{}, Slice{1, 3}, Ellipsis{}}).
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  Tensor view(Shape shape) const;          // one -1 allowed; ShapeError where strides forbid it
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor t() const;                        // transpose of a tensor of <= 2 dims
  Tensor permute(std::vector<std::int64_t> dims) const;
  Tensor squeeze() const;                  // removes every size-1 dimension
  Tensor squeeze(std::int64_t dim) const;  // removes `dim` if its size is 1
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor unflatten(std::int64_t dim, Shape sizes) const;  // one -1 allowed
  Tensor expand(Shape shape) const;        // -1 keeps a size; new dims and size-1 dims get stride 0
  Tensor broadcast_to(Shape shape) const;  // expand, with PyTorch's name
  Tensor as_strided(Shape shape, Strides strides, std::optional<std::int64_t> storage_offset = std::nullopt) const;

  // ---- views where possible, copies otherwise ----
  Tensor reshape(Shape shape) const;       // view when compute_view_strides allows, else a copy
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;  // via reshape
  Tensor contiguous() const;               // *this when already contiguous, else a copy

  // ---- copies ----
  Tensor clone() const;  // keeps the strides of a non-overlapping, dense tensor (preserve_format)
  Tensor to(DType dtype) const;    // *this if already `dtype`; else elementwise, rounding to nearest even
  Tensor to(Device device) const;  // *this if already on `device`

  // "tensor([[0, 1], [2, 3]], dtype=f32)"; at most `max_elements` values, then "...".
  std::string str(std::int64_t max_elements = 64) const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::f32;
  Shape shape_;
  Strides strides_;
  std::int64_t offset_ = 0;
};

// ---- factories -------------------------------------------------------------------------------

struct TensorOptions {
  DType dtype = DType::f32;
  Device device = Device::cpu();
};

Tensor empty(Shape shape, TensorOptions options = {});  // not initialized
Tensor empty_strided(Shape shape, Strides strides, TensorOptions options = {});
Tensor zeros(Shape shape, TensorOptions options = {});
Tensor ones(Shape shape, TensorOptions options = {});
Tensor full(Shape shape, double value, TensorOptions options = {});
// [start, end) in steps of `step`, as torch.arange: ceil((end - start) / step) elements.
Tensor arange(double end, TensorOptions options = {});
Tensor arange(double start, double end, double step = 1, TensorOptions options = {});
// From values in row-major order; shape {} means 1-D of values.size(). ShapeError if the counts differ.
Tensor from_values(std::span<const double> values, Shape shape = {}, TensorOptions options = {});
Tensor from_values(std::initializer_list<double> values, Shape shape = {}, TensorOptions options = {});

// Random tensors, identical on every platform for one seed (random.hpp says how): element i of
// the row-major order is a pure function of (seed, i).
Tensor rand(Shape shape, std::uint64_t seed, TensorOptions options = {});   // uniform in [0, 1)
Tensor randn(Shape shape, std::uint64_t seed, TensorOptions options = {});  // standard normal

// The strided walk (strided.hpp) over operands that all have one shape (broadcast them first:
// broadcast_to); ShapeError otherwise.
StridedIterator strided_iterator(std::span<const Tensor> operands);

// A new tensor with the shape of `like`, its strides where `like` is non-overlapping and dense
// (PyTorch's preserve_format), row-major strides otherwise.
Tensor empty_like(const Tensor& like, std::optional<DType> dtype = std::nullopt,
                  std::optional<Device> device = std::nullopt);

}  // namespace flopscope
