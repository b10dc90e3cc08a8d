#include "flopscope/shape.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "flopscope/checked.hpp"

namespace flopscope {

// ---- shapes and strides ----------------------------------------------------------------------

std::string shape_str(std::span<const std::int64_t> sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(sizes[i]);
  }
  return out + "]";
}

std::int64_t shape_numel(std::span<const std::int64_t> sizes) { return checked_numel(sizes); }

Strides contiguous_strides(std::span<const std::int64_t> sizes) {
  Strides strides(sizes.size());
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    strides[i] = expected;
    if (i > 0) expected = checked_mul(expected, std::max<std::int64_t>(sizes[i], 1), "strides");
  }
  return strides;
}

bool is_contiguous(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides) {
  if (shape_numel(sizes) == 0) return true;
  std::int64_t expected = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool is_non_overlapping_and_dense(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides) {
  const std::size_t dims = sizes.size();
  if (dims == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<std::size_t> order(dims);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Dimensions of size < 2 go last: they do not constrain the layout.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  std::int64_t required = 1;
  for (std::size_t i : order) {
    if (sizes[i] < 2) return true;
    if (strides[i] != required) return false;
    required *= sizes[i];
  }
  return true;
}

// Note [computeStride]: a view must express every new dimension as a stride of the old storage.
// Walk the old dimensions from the last, grouping them into "chunks" that are contiguous among
// themselves (stride[d-1] == size[d] * stride[d], size-1 dimensions ignored); every chunk must be
// covered exactly by consecutive new dimensions, whose strides are then multiples of the chunk's
// innermost stride. A new dimension that would span two chunks has no single stride: no view.
std::optional<Strides> compute_view_strides(std::span<const std::int64_t> old_shape,
                                            std::span<const std::int64_t> old_strides,
                                            std::span<const std::int64_t> new_shape) {
  if (old_shape.empty()) return Strides(new_shape.size(), 1);
  const std::int64_t numel = shape_numel(old_shape);
  if (numel == 0 && std::equal(old_shape.begin(), old_shape.end(), new_shape.begin(), new_shape.end()))
    return Strides(old_strides.begin(), old_strides.end());
  Strides new_strides(new_shape.size());
  if (numel == 0) {
    // Any strides do; use the ones resize would give (as PyTorch, to match NumPy).
    for (std::size_t d = new_shape.size(); d-- > 0;)
      new_strides[d] = d + 1 == new_shape.size()
                           ? 1
                           : checked_mul(std::max<std::int64_t>(new_shape[d + 1], 1), new_strides[d + 1], "strides");
    return new_strides;
  }
  auto view_d = static_cast<std::int64_t>(new_shape.size()) - 1;
  std::int64_t chunk_base_stride = old_strides.back();
  std::int64_t tensor_numel = 1;
  std::int64_t view_numel = 1;
  for (auto tensor_d = static_cast<std::int64_t>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];  // at most numel
    // The stride that would continue the chunk; beyond int64 no stride is it.
    const std::optional<std::int64_t> continued = try_mul(tensor_numel, chunk_base_stride);
    if (tensor_d == 0 || (old_shape[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != continued)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        new_strides[view_d] = checked_mul(view_numel, chunk_base_stride, "strides");
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

Shape infer_shape(std::span<const std::int64_t> shape, std::int64_t numel, std::string_view operation) {
  Shape result(shape.begin(), shape.end());
  std::int64_t known = 1;
  std::optional<std::size_t> inferred;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (inferred)
        throw ShapeError(std::string(operation) + ": shape '" + shape_str(shape) + "': only one dimension can be inferred");
      inferred = d;
    } else if (shape[d] >= 0) {
      known = checked_mul(known, shape[d], "element count");
    } else {
      throw ShapeError(std::string(operation) + ": shape '" + shape_str(shape) + "': invalid shape dimension " +
                       std::to_string(shape[d]));
    }
  }
  if (numel == known || (inferred && known > 0 && numel % known == 0)) {
    if (!inferred) return result;
    if (known != 0) {
      result[*inferred] = numel / known;
      return result;
    }
  }
  if (inferred && known == 0 && numel == 0)
    throw ShapeError(std::string(operation) + ": cannot reshape tensor of 0 elements into shape " + shape_str(shape) +
                     " because the unspecified dimension size -1 can be any value and is ambiguous");
  throw ShapeError(std::string(operation) + ": shape '" + shape_str(shape) + "' is invalid for input of size " +
                   std::to_string(numel));
}

}  // namespace flopscope
