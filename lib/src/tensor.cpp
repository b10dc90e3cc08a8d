#include "flopscope/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <numeric>
#include <sstream>

#include "flopscope/checked.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/strided.hpp"
#include "flopscope/random.hpp"

namespace flopscope {

// ---- iteration -------------------------------------------------------------------------------

namespace {

Shape common_shape(std::span<const Tensor> operands) {
  if (operands.empty()) throw ShapeError("StridedIterator: no operands");
  for (const auto& t : operands)
    if (t.shape() != operands[0].shape())
      throw ShapeError("StridedIterator: operands of shapes " + shape_str(operands[0].shape()) + " and " +
                       shape_str(t.shape()) + " (broadcast them first)");
  return operands[0].shape();
}

std::vector<Strides> strides_of(std::span<const Tensor> operands) {
  std::vector<Strides> out;
  for (const auto& t : operands) out.push_back(t.strides());
  return out;
}

std::vector<std::int64_t> offsets_of(std::span<const Tensor> operands) {
  std::vector<std::int64_t> out;
  for (const auto& t : operands) out.push_back(t.storage_offset());
  return out;
}

}  // namespace

StridedIterator strided_iterator(std::span<const Tensor> operands) {
  return StridedIterator(common_shape(operands), strides_of(operands), offsets_of(operands));
}

// ---- elements --------------------------------------------------------------------------------

double load_element(const void* address, DType dtype) {
  switch (dtype) {
    case DType::f64: {
      double value;
      std::memcpy(&value, address, sizeof value);
      return value;
    }
    case DType::f32: {
      float value;
      std::memcpy(&value, address, sizeof value);
      return value;
    }
    case DType::f16:
    case DType::bf16: {
      std::uint16_t bits;
      std::memcpy(&bits, address, sizeof bits);
      return decode_bits(dtype, bits);
    }
    case DType::f8e4m3:
    case DType::f8e5m2: {
      std::uint8_t bits;
      std::memcpy(&bits, address, sizeof bits);
      return decode_bits(dtype, bits);
    }
  }
  return 0;
}

void store_element(void* address, DType dtype, double value) {
  switch (dtype) {
    case DType::f64:
      std::memcpy(address, &value, sizeof value);
      return;
    case DType::f32: {
      const auto narrow = static_cast<float>(value);  // IEEE round to nearest even; overflow to inf
      std::memcpy(address, &narrow, sizeof narrow);
      return;
    }
    case DType::f16:
    case DType::bf16: {
      const auto bits = static_cast<std::uint16_t>(encode_bits(dtype, value));
      std::memcpy(address, &bits, sizeof bits);
      return;
    }
    case DType::f8e4m3:
    case DType::f8e5m2: {
      const auto bits = static_cast<std::uint8_t>(encode_bits(dtype, value));
      std::memcpy(address, &bits, sizeof bits);
      return;
    }
  }
}

// ---- storage ---------------------------------------------------------------------------------

namespace {

class CpuAllocator final : public StorageAllocator {
 public:
  static constexpr std::align_val_t kAlignment{64};
  void* allocate(std::size_t bytes, int) override { return ::operator new(std::max<std::size_t>(bytes, 1), kAlignment); }
  void deallocate(void* data, std::size_t, int) noexcept override { ::operator delete(data, kAlignment); }
  void copy_to_host(void* host, const void* source, std::size_t bytes, int) override {
    if (bytes > 0) std::memcpy(host, source, bytes);
  }
  void copy_from_host(void* destination, const void* host, std::size_t bytes, int) override {
    if (bytes > 0) std::memcpy(destination, host, bytes);
  }
};

struct AllocatorRegistry {
  std::mutex mutex;
  std::shared_ptr<StorageAllocator> cpu = std::make_shared<CpuAllocator>();
  std::shared_ptr<StorageAllocator> cuda;
};

AllocatorRegistry& registry() {
  static AllocatorRegistry instance;
  return instance;
}

}  // namespace

void set_storage_allocator(Device::Kind kind, std::shared_ptr<StorageAllocator> allocator) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  (kind == Device::Kind::cpu ? r.cpu : r.cuda) = std::move(allocator);
}

std::shared_ptr<StorageAllocator> storage_allocator(Device::Kind kind) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return kind == Device::Kind::cpu ? r.cpu : r.cuda;
}

Storage::Storage(std::size_t bytes, Device device) : bytes_(bytes), device_(device) {
  allocator_ = storage_allocator(device.kind);
  if (!allocator_)
    throw std::runtime_error("tensor storage on " + device.str() +
                             ": no storage allocator is registered for this kind of device (link flopscope_kernels "
                             "and call flopscope::kernels::cuda::register_tensor_storage())");
  data_ = allocator_->allocate(bytes, device.index);
}

Storage::~Storage() {
  if (data_ != nullptr) allocator_->deallocate(data_, bytes_, device_.index);
}

// ---- helpers ---------------------------------------------------------------------------------

namespace {

std::string of_tensor(const Tensor& t) { return " of a tensor of shape " + shape_str(t.shape()); }

std::string of_tensor_with_strides(const Tensor& t) {
  return " of a tensor of shape " + shape_str(t.shape()) + " and strides " + shape_str(t.strides());
}

// PyTorch's maybe_wrap_dim: a 0-d tensor wraps as if it had one dimension.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t dims, const std::string& operation) {
  const std::int64_t range = std::max<std::int64_t>(dims, 1);
  if (dim < -range || dim >= range)
    throw ShapeError(operation + ": Dimension out of range (expected to be in range of [" + std::to_string(-range) +
                     ", " + std::to_string(range - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + range : dim;
}

// Storage elements [first, first + count) that a view can touch (strides are never negative).
struct ElementSpan {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

ElementSpan view_span(const Tensor& t) {
  if (t.numel() == 0) return {t.storage_offset(), 0};
  std::int64_t extent = 1;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    extent = checked_add(extent, checked_mul(t.shape()[d] - 1, t.strides()[d], "storage extent"), "storage extent");
  return {t.storage_offset(), extent};
}

std::byte* storage_bytes(const Tensor& t) { return static_cast<std::byte*>(t.storage()->data()); }

// A CPU tensor with t's shape and strides over a host copy of the storage span t can touch.
Tensor host_mirror(const Tensor& t) {
  const ElementSpan span = view_span(t);
  const std::size_t element = t.element_size();
  auto host = std::make_shared<Storage>(to_size(checked_bytes(span.count, element)), Device::cpu());
  if (span.count > 0)
    storage_allocator(t.device().kind)
        ->copy_to_host(host->data(), storage_bytes(t) + span.first * static_cast<std::int64_t>(element),
                       static_cast<std::size_t>(span.count) * element, t.device().index);
  return Tensor(host, t.dtype(), t.shape(), t.strides(), 0);
}

// Writes a host mirror (from host_mirror(t), since modified) back to t's device storage.
void write_back(const Tensor& t, const Tensor& mirror) {
  const ElementSpan span = view_span(t);
  const std::size_t element = t.element_size();
  if (span.count > 0)
    storage_allocator(t.device().kind)
        ->copy_from_host(storage_bytes(t) + span.first * static_cast<std::int64_t>(element), mirror.storage()->data(),
                         static_cast<std::size_t>(span.count) * element, t.device().index);
}

// Host tensors to host tensors: destination[i] = source[i] for every index (same shapes).
void copy_elements_host(const Tensor& destination, const Tensor& source) {
  const std::size_t dst_size = destination.element_size(), src_size = source.element_size();
  std::byte* dst = storage_bytes(destination);
  const std::byte* src = storage_bytes(source);
  if (destination.dtype() == source.dtype() && destination.strides() == source.strides() &&
      destination.is_non_overlapping_and_dense()) {
    // Same dense layout: the spans are the same bytes in the same order.
    std::memmove(dst + destination.storage_offset() * static_cast<std::int64_t>(dst_size),
                 src + source.storage_offset() * static_cast<std::int64_t>(src_size),
                 static_cast<std::size_t>(destination.numel()) * dst_size);
    return;
  }
  const Tensor operands[] = {destination, source};
  for (StridedIterator it = strided_iterator(operands); !it.done(); it.next()) {
    const double value = load_element(src + it.offset(1) * static_cast<std::int64_t>(src_size), source.dtype());
    store_element(dst + it.offset(0) * static_cast<std::int64_t>(dst_size), destination.dtype(), value);
  }
}

std::int64_t element_offset(const Tensor& t, std::span<const std::int64_t> index, const char* operation) {
  if (static_cast<std::int64_t>(index.size()) != t.dim())
    throw ShapeError(std::string(operation) + ": index " + shape_str(index) + " has " + std::to_string(index.size()) +
                     " entries" + of_tensor(t));
  std::int64_t offset = t.storage_offset();
  for (std::size_t d = 0; d < index.size(); ++d) {
    std::int64_t i = index[d];
    const std::int64_t size = t.shape()[d];
    if (i < -size || i >= size)
      throw ShapeError(std::string(operation) + ": index " + shape_str(index) + " is out of range" + of_tensor(t));
    if (i < 0) i += size;
    offset += i * t.strides()[d];
  }
  return offset;
}

void format_values(std::string& out, const std::vector<double>& values, const Shape& shape, std::size_t dim,
                   std::int64_t& position, std::int64_t limit) {
  if (dim == shape.size()) {
    if (position < limit) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%.6g", values[static_cast<std::size_t>(position)]);
      out += buffer;
    } else if (position == limit) {
      out += "...";
    }
    ++position;
    return;
  }
  out += "[";
  for (std::int64_t i = 0; i < shape[dim]; ++i) {
    if (i > 0 && position <= limit) out += ", ";
    format_values(out, values, shape, dim + 1, position, limit);
  }
  out += "]";
}

}  // namespace

// ---- tensor ----------------------------------------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Strides strides, std::int64_t storage_offset)
    : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)),
      offset_(storage_offset) {
  if (shape_.size() != strides_.size())
    throw ShapeError("tensor: shape " + shape_str(shape_) + " and strides " + shape_str(strides_) +
                     " have different lengths");
  for (std::size_t d = 0; d < shape_.size(); ++d)
    if (shape_[d] < 0 || strides_[d] < 0)
      throw ShapeError("tensor: shape " + shape_str(shape_) + " and strides " + shape_str(strides_) +
                       " must not be negative");
  if (offset_ < 0) throw ShapeError("tensor: negative storage offset " + std::to_string(offset_));
  if (storage_ && numel() > 0) {
    const ElementSpan span = view_span(*this);
    const std::size_t needed =
        to_size(checked_bytes(checked_add(span.first, span.count, "storage extent"), dtype_size(dtype_), "storage bytes"));
    if (needed > storage_->bytes())
      throw ShapeError("tensor: shape " + shape_str(shape_) + ", strides " + shape_str(strides_) + " and offset " +
                       std::to_string(offset_) + " reach byte " + std::to_string(needed) + " of a storage of " +
                       std::to_string(storage_->bytes()) + " bytes");
  }
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

std::int64_t Tensor::size(std::int64_t dim_index) const {
  if (dim_index >= 0 && dim_index < dim()) return shape_[static_cast<std::size_t>(dim_index)];  // no message to build
  if (dim() == 0) throw ShapeError("size(" + std::to_string(dim_index) + ")" + of_tensor(*this) + ": a 0-dim tensor has no dimensions");
  return shape_[static_cast<std::size_t>(wrap_dim(dim_index, dim(), "size(" + std::to_string(dim_index) + ")" + of_tensor(*this)))];
}

std::int64_t Tensor::stride(std::int64_t dim_index) const {
  if (dim_index >= 0 && dim_index < dim()) return strides_[static_cast<std::size_t>(dim_index)];
  if (dim() == 0) throw ShapeError("stride(" + std::to_string(dim_index) + ")" + of_tensor(*this) + ": a 0-dim tensor has no dimensions");
  return strides_[static_cast<std::size_t>(wrap_dim(dim_index, dim(), "stride(" + std::to_string(dim_index) + ")" + of_tensor(*this)))];
}

void* Tensor::data_ptr() const {
  return storage_ ? storage_bytes(*this) + offset_ * static_cast<std::int64_t>(element_size()) : nullptr;
}

TensorRef Tensor::ref() const {
  return TensorRef::strided(storage_ ? storage_->data() : nullptr, dtype_, shape_, strides_, offset_, device());
}

bool Tensor::same_storage(const Tensor& other) const { return storage_ != nullptr && storage_ == other.storage_; }

double Tensor::item() const {
  if (numel() != 1)
    throw ShapeError("item()" + of_tensor(*this) + ": a Tensor with " + std::to_string(numel()) +
                     " elements cannot be converted to Scalar");
  return to_vector()[0];
}

double Tensor::at(std::span<const std::int64_t> index) const {
  const std::int64_t offset = element_offset(*this, index, "at");
  if (device().is_cpu()) return load_element(storage_bytes(*this) + offset * static_cast<std::int64_t>(element_size()), dtype_);
  std::byte buffer[8];
  storage_allocator(device().kind)
      ->copy_to_host(buffer, storage_bytes(*this) + offset * static_cast<std::int64_t>(element_size()), element_size(),
                     device().index);
  return load_element(buffer, dtype_);
}

void Tensor::set(std::span<const std::int64_t> index, double value) const {
  const std::int64_t offset = element_offset(*this, index, "set");
  std::byte* address = storage_bytes(*this) + offset * static_cast<std::int64_t>(element_size());
  if (device().is_cpu()) {
    store_element(address, dtype_, value);
    return;
  }
  std::byte buffer[8];
  store_element(buffer, dtype_, value);
  storage_allocator(device().kind)->copy_from_host(address, buffer, element_size(), device().index);
}

std::vector<double> Tensor::to_vector() const {
  if (!device().is_cpu()) return host_mirror(*this).to_vector();
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(numel()));
  const std::byte* base = storage_bytes(*this);
  const auto size = static_cast<std::int64_t>(element_size());
  const Tensor operands[] = {*this};
  for (StridedIterator it = strided_iterator(operands); !it.done(); it.next()) values.push_back(load_element(base + it.offset(0) * size, dtype_));
  return values;
}

const Tensor& Tensor::fill_(double value) const {
  copy_(full({}, value, {DType::f64, Device::cpu()}));
  return *this;
}

const Tensor& Tensor::copy_(const Tensor& source) const {
  Tensor src = source.device().is_cpu() ? source : host_mirror(source);
  try {
    src = src.expand(shape_);
  } catch (const ShapeError&) {
    throw ShapeError("copy_: source of shape " + shape_str(source.shape()) + " cannot be broadcast to the shape " +
                     shape_str(shape_) + " of the destination");
  }
  if (device().is_cpu()) {
    copy_elements_host(*this, src);
  } else {
    Tensor mirror = host_mirror(*this);
    copy_elements_host(mirror, src);
    write_back(*this, mirror);
  }
  return *this;
}

// ---- views -----------------------------------------------------------------------------------

Tensor Tensor::select(std::int64_t dim_index, std::int64_t index) const {
  const std::string operation = "select(" + std::to_string(dim_index) + ", " + std::to_string(index) + ")" + of_tensor(*this);
  if (dim() == 0) throw ShapeError(operation + ": select() cannot be applied to a 0-dim tensor");
  const auto d = static_cast<std::size_t>(wrap_dim(dim_index, dim(), operation));
  const std::int64_t size = shape_[d];
  if (index < -size || index >= size)
    throw ShapeError(operation + ": index " + std::to_string(index) + " out of range for tensor of size " +
                     shape_str(shape_) + " at dimension " + std::to_string(d));
  if (index < 0) index += size;
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(d));
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_ + index * strides_[d]);
}

Tensor Tensor::slice(std::int64_t dim_index, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                     std::int64_t step) const {
  const std::string operation = "slice(dim=" + std::to_string(dim_index) + ")" + of_tensor(*this);
  if (dim() == 0) throw ShapeError(operation + ": slice() cannot be applied to a 0-dim tensor");
  const auto d = static_cast<std::size_t>(wrap_dim(dim_index, dim(), operation));
  if (step <= 0) throw ShapeError(operation + ": slice step must be positive (got " + std::to_string(step) + ")");
  const std::int64_t size = shape_[d];
  std::int64_t first = start.value_or(0), last = stop.value_or(size);
  if (first < 0) first += size;
  if (last < 0) last += size;
  first = std::clamp<std::int64_t>(first, 0, size);
  last = std::clamp<std::int64_t>(last, first, size);
  Shape shape = shape_;
  Strides strides = strides_;
  shape[d] = (last - first + step - 1) / step;
  strides[d] = strides_[d] * step;
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_ + first * strides_[d]);
}

Tensor Tensor::narrow(std::int64_t dim_index, std::int64_t start, std::int64_t length) const {
  const std::string operation = "narrow(" + std::to_string(dim_index) + ", " + std::to_string(start) + ", " +
                                std::to_string(length) + ")" + of_tensor(*this);
  if (dim() == 0) throw ShapeError(operation + ": narrow() cannot be applied to a 0-dim tensor");
  const auto d = static_cast<std::size_t>(wrap_dim(dim_index, dim(), operation));
  const std::int64_t size = shape_[d];
  if (start < -size || start > size) throw ShapeError(operation + ": start out of range");
  if (start < 0) start += size;
  if (length < 0 || start + length > size)
    throw ShapeError(operation + ": start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
                     ") exceeds dimension size (" + std::to_string(size) + ")");
  return slice(dim_index, start, start + length, 1);
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  std::int64_t consumed = 0;  // dimensions the indices name (an Ellipsis names the rest)
  int ellipses = 0;
  for (const auto& entry : indices) {
    if (std::holds_alternative<Ellipsis>(entry)) ++ellipses;
    else ++consumed;
  }
  if (ellipses > 1) throw ShapeError("index" + of_tensor(*this) + ": an index can only have a single ellipsis ('...')");
  if (consumed > dim())
    throw ShapeError("index" + of_tensor(*this) + ": too many indices for tensor of dimension " + std::to_string(dim()) +
                     " (got " + std::to_string(consumed) + ")");
  Tensor result = *this;
  std::int64_t d = 0;  // the dimension of `result` the next entry applies to
  for (const auto& entry : indices) {
    if (const auto* i = std::get_if<std::int64_t>(&entry)) {
      result = result.select(d, *i);
    } else if (const auto* s = std::get_if<Slice>(&entry)) {
      result = result.slice(d, s->start, s->stop, s->step);
      ++d;
    } else {
      d += dim() - consumed;
    }
  }
  return result;
}

Tensor Tensor::view(Shape shape) const {
  const Shape requested = shape;
  shape = infer_shape(shape, numel(), "view(" + shape_str(requested) + ")" + of_tensor(*this));
  auto strides = compute_view_strides(shape_, strides_, shape);
  if (!strides)
    throw ShapeError("view(" + shape_str(requested) + ")" + of_tensor_with_strides(*this) +
                     ": view size is not compatible with input tensor's size and stride (at least one dimension spans "
                     "across two contiguous subspaces). Use .reshape(...) instead.");
  return Tensor(storage_, dtype_, std::move(shape), std::move(*strides), offset_);
}

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
  const std::string operation = "transpose(" + std::to_string(dim0) + ", " + std::to_string(dim1) + ")" + of_tensor(*this);
  const auto a = wrap_dim(dim0, dim(), operation), b = wrap_dim(dim1, dim(), operation);
  if (dim() == 0 || a == b) return *this;
  Shape shape = shape_;
  Strides strides = strides_;
  std::swap(shape[static_cast<std::size_t>(a)], shape[static_cast<std::size_t>(b)]);
  std::swap(strides[static_cast<std::size_t>(a)], strides[static_cast<std::size_t>(b)]);
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::t() const {
  if (dim() > 2) throw ShapeError("t()" + of_tensor(*this) + ": t() expects a tensor with <= 2 dimensions, but self is " +
                                  std::to_string(dim()) + "D");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::permute(std::vector<std::int64_t> dims) const {
  const std::string operation = "permute(" + shape_str(dims) + ")" + of_tensor(*this);
  if (static_cast<std::int64_t>(dims.size()) != dim())
    throw ShapeError(operation + ": number of dimensions in the tensor input does not match the length of the desired "
                     "ordering of dimensions i.e. input.dim() = " + std::to_string(dim()) + " is not equal to len(dims) = " +
                     std::to_string(dims.size()));
  Shape shape(dims.size());
  Strides strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<std::size_t>(wrap_dim(dims[i], dim(), operation));
    if (seen[d]) throw ShapeError(operation + ": duplicate dims are not allowed.");
    seen[d] = true;
    shape[i] = shape_[d];
    strides[i] = strides_[d];
  }
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::squeeze() const {
  Shape shape;
  Strides strides;
  for (std::size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] == 1) continue;
    shape.push_back(shape_[d]);
    strides.push_back(strides_[d]);
  }
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::squeeze(std::int64_t dim_index) const {
  const auto d = wrap_dim(dim_index, dim(), "squeeze(" + std::to_string(dim_index) + ")" + of_tensor(*this));
  if (dim() == 0 || shape_[static_cast<std::size_t>(d)] != 1) return *this;
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::unsqueeze(std::int64_t dim_index) const {
  const auto d = wrap_dim(dim_index, dim() + 1, "unsqueeze(" + std::to_string(dim_index) + ")" + of_tensor(*this));
  Shape shape = shape_;
  Strides strides = strides_;
  const std::int64_t stride = d >= dim() ? 1 : shape_[static_cast<std::size_t>(d)] * strides_[static_cast<std::size_t>(d)];
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::unflatten(std::int64_t dim_index, Shape sizes) const {
  const std::string operation = "unflatten(" + std::to_string(dim_index) + ", " + shape_str(sizes) + ")" + of_tensor(*this);
  if (sizes.empty()) throw ShapeError(operation + ": sizes must be non-empty");
  const auto d = static_cast<std::size_t>(wrap_dim(dim_index, dim(), operation));
  Shape inferred;
  try {
    inferred = infer_shape(sizes, shape_[d], operation);
  } catch (const ShapeError&) {
    throw ShapeError(operation + ": Provided sizes " + shape_str(sizes) +
                     " don't multiply up to the size of dim " + std::to_string(d) + " (" + std::to_string(shape_[d]) +
                     ") in the input tensor");
  }
  Shape shape(shape_.begin(), shape_.begin() + static_cast<std::ptrdiff_t>(d));
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  shape.insert(shape.end(), shape_.begin() + static_cast<std::ptrdiff_t>(d) + 1, shape_.end());
  return view(std::move(shape));
}

Tensor Tensor::expand(Shape shape) const {
  const std::string operation = "expand(" + shape_str(shape) + ")" + of_tensor(*this);
  const auto dims = static_cast<std::int64_t>(shape.size());
  if (dims < dim())
    throw ShapeError(operation + ": the number of sizes provided (" + std::to_string(dims) +
                     ") must be greater or equal to the number of dimensions in the tensor (" + std::to_string(dim()) + ")");
  Shape sizes(shape.size());
  Strides strides(shape.size());
  for (std::int64_t i = dims - 1; i >= 0; --i) {
    const std::int64_t from_end = dims - 1 - i;
    const std::int64_t d = dim() - 1 - from_end;
    std::int64_t size = d >= 0 ? shape_[static_cast<std::size_t>(d)] : 1;
    // A new leading dimension gets PyTorch's stride: the next one's extent (size x stride; 0 where
    // that does not fit, or where the tensor is 0-d), and 0 below if it is expanded past size 1.
    std::int64_t stride = 0;
    if (d >= 0)
      stride = strides_[static_cast<std::size_t>(d)];
    else if (dim() > 0 && __builtin_mul_overflow(sizes[static_cast<std::size_t>(i + 1)],
                                                 strides[static_cast<std::size_t>(i + 1)], &stride))
      stride = 0;
    std::int64_t target = shape[static_cast<std::size_t>(i)];
    if (target == -1) {
      if (d < 0)
        throw ShapeError(operation + ": The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                         "dimension " + std::to_string(i));
      target = size;
    }
    if (target < 0) throw ShapeError(operation + ": invalid size " + std::to_string(target));
    if (size != target) {
      if (size != 1)
        throw ShapeError(operation + ": The expanded size of the tensor (" + std::to_string(target) +
                         ") must match the existing size (" + std::to_string(size) + ") at non-singleton dimension " +
                         std::to_string(i) + ".  Target sizes: " + shape_str(shape) + ".  Tensor sizes: " + shape_str(shape_));
      size = target;
      stride = 0;
    }
    sizes[static_cast<std::size_t>(i)] = size;
    strides[static_cast<std::size_t>(i)] = stride;
  }
  return Tensor(storage_, dtype_, std::move(sizes), std::move(strides), offset_);
}

Tensor Tensor::broadcast_to(Shape shape) const { return expand(std::move(shape)); }

Tensor Tensor::as_strided(Shape shape, Strides strides, std::optional<std::int64_t> storage_offset) const {
  return Tensor(storage_, dtype_, std::move(shape), std::move(strides), storage_offset.value_or(offset_));
}

Tensor Tensor::reshape(Shape shape) const {
  const Shape inferred = infer_shape(shape, numel(), "reshape(" + shape_str(shape) + ")" + of_tensor(*this));
  if (auto strides = compute_view_strides(shape_, strides_, inferred))
    return Tensor(storage_, dtype_, inferred, std::move(*strides), offset_);
  Tensor copy = empty(shape_, {dtype_, device()});
  copy.copy_(*this);
  return copy.view(inferred);
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  const std::string operation = "flatten(" + std::to_string(start_dim) + ", " + std::to_string(end_dim) + ")" + of_tensor(*this);
  const auto first = wrap_dim(start_dim, dim(), operation), last = wrap_dim(end_dim, dim(), operation);
  if (first > last) throw ShapeError(operation + ": flatten() has invalid args: start_dim cannot come after end_dim");
  if (dim() == 0) return reshape({1});
  if (first == last) return *this;
  Shape shape(shape_.begin(), shape_.begin() + first);
  std::int64_t flat = 1;
  for (auto d = first; d <= last; ++d) flat *= shape_[static_cast<std::size_t>(d)];
  shape.push_back(flat);
  shape.insert(shape.end(), shape_.begin() + last + 1, shape_.end());
  return reshape(std::move(shape));
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor copy = empty(shape_, {dtype_, device()});
  copy.copy_(*this);
  return copy;
}

Tensor Tensor::clone() const {
  Tensor copy = empty_like(*this);
  copy.copy_(*this);
  return copy;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor copy = empty_like(*this, dtype);
  copy.copy_(*this);
  return copy;
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  // The result's layout: these strides when dense (preserve_format), row-major otherwise.
  Tensor result = empty_like(*this, std::nullopt, device);
  Tensor host_source = this->device().is_cpu() ? *this : host_mirror(*this);
  if (device.is_cpu()) {
    copy_elements_host(result, host_source);
  } else {
    Tensor host_result = empty_like(result, std::nullopt, Device::cpu());
    copy_elements_host(host_result, host_source);
    storage_allocator(device.kind)
        ->copy_from_host(result.storage()->data(), host_result.storage()->data(), result.storage()->bytes(), device.index);
  }
  return result;
}

std::string Tensor::str(std::int64_t max_elements) const {
  if (!defined()) return "tensor(undefined)";
  std::string out = "tensor(";
  std::int64_t position = 0;
  format_values(out, to_vector(), shape_, 0, position, max_elements);
  out += ", dtype=" + std::string(dtype_name(dtype_));
  if (!device().is_cpu()) out += ", device=" + device().str();
  return out + ")";
}

// ---- factories -------------------------------------------------------------------------------

Tensor empty_strided(Shape shape, Strides strides, TensorOptions options) {
  for (auto size : shape)
    if (size < 0) throw ShapeError("empty: negative dimension in shape " + shape_str(shape));
  if (shape.size() != strides.size())
    throw ShapeError("empty_strided: shape " + shape_str(shape) + " and strides " + shape_str(strides) +
                     " have different lengths");
  std::int64_t elements = 0;
  if (shape_numel(shape) > 0) {
    elements = 1;
    for (std::size_t d = 0; d < shape.size(); ++d)
      elements = checked_add(elements, checked_mul(shape[d] - 1, strides[d], "storage extent"), "storage extent");
  }
  const std::int64_t bytes = checked_bytes(elements, dtype_size(options.dtype), "storage bytes");
  auto storage = std::make_shared<Storage>(to_size(bytes), options.device);
  return Tensor(std::move(storage), options.dtype, std::move(shape), std::move(strides), 0);
}

Tensor empty(Shape shape, TensorOptions options) {
  Strides strides = contiguous_strides(shape);
  return empty_strided(std::move(shape), std::move(strides), options);
}

Tensor empty_like(const Tensor& like, std::optional<DType> dtype, std::optional<Device> device) {
  const TensorOptions options{dtype.value_or(like.dtype()), device.value_or(like.device())};
  if (like.is_non_overlapping_and_dense()) return empty_strided(like.shape(), like.strides(), options);
  return empty(like.shape(), options);
}

namespace {

// Fills a new CPU tensor element by element (row-major index i), then moves it to the device.
template <typename Generate>
Tensor generate(Shape shape, TensorOptions options, Generate value_of) {
  Tensor host = empty(std::move(shape), {options.dtype, Device::cpu()});
  auto* base = static_cast<std::byte*>(host.data_ptr());
  const std::int64_t numel = host.numel();
  const auto size = static_cast<std::int64_t>(host.element_size());
  for (std::int64_t i = 0; i < numel; ++i) store_element(base + i * size, options.dtype, value_of(i));
  return host.to(options.device);
}

int significand_bits(DType dtype) { return dtype_row(dtype).mantissa_bits + 1; }  // the implicit bit

}  // namespace

Tensor zeros(Shape shape, TensorOptions options) { return full(std::move(shape), 0.0, options); }

Tensor ones(Shape shape, TensorOptions options) { return full(std::move(shape), 1.0, options); }

Tensor full(Shape shape, double value, TensorOptions options) {
  return generate(std::move(shape), options, [value](std::int64_t) { return value; });
}

Tensor arange(double end, TensorOptions options) { return arange(0, end, 1, options); }

Tensor arange(double start, double end, double step, TensorOptions options) {
  if (step == 0) throw ShapeError("arange(" + std::to_string(start) + ", " + std::to_string(end) + "): step must be nonzero");
  if ((step > 0 && end < start) || (step < 0 && end > start))
    throw ShapeError("arange(" + std::to_string(start) + ", " + std::to_string(end) + ", " + std::to_string(step) +
                     "): upper bound and larger bound inconsistent with step sign");
  const double steps = std::ceil((end - start) / step);
  if (!(steps < 0x1p63))  // NaN or beyond int64: the cast would be undefined
    throw ShapeError("arange(" + std::to_string(start) + ", " + std::to_string(end) + ", " + std::to_string(step) +
                     "): " + std::to_string(steps) + " elements do not fit int64");
  const auto count = static_cast<std::int64_t>(steps);
  return generate({count}, options, [=](std::int64_t i) { return start + static_cast<double>(i) * step; });
}

Tensor from_values(std::span<const double> values, Shape shape, TensorOptions options) {
  if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
  shape = infer_shape(shape, static_cast<std::int64_t>(values.size()), "from_values(" + std::to_string(values.size()) + " values)");
  return generate(std::move(shape), options, [&](std::int64_t i) { return values[static_cast<std::size_t>(i)]; });
}

Tensor from_values(std::initializer_list<double> values, Shape shape, TensorOptions options) {
  return from_values(std::span(values.begin(), values.size()), std::move(shape), options);
}

Tensor rand(Shape shape, std::uint64_t seed, TensorOptions options) {
  const int bits = significand_bits(options.dtype);
  return generate(std::move(shape), options,
                  [=](std::int64_t i) { return uniform(seed, static_cast<std::uint64_t>(i), bits); });
}

Tensor randn(Shape shape, std::uint64_t seed, TensorOptions options) {
  return generate(std::move(shape), options, [=](std::int64_t i) { return normal(seed, static_cast<std::uint64_t>(i)); });
}

}  // namespace flopscope
