// Strided copies: .contiguous() of a view. A strided copy IS a CopyProblem (copy.hpp) whose src is
// any view (a transpose, a permutation, a slice with a step, an expand) and whose dst is
// contiguous; its variants, per device, are in kernels/cpu/strided.cpp and kernels/cuda/strided.cu.
// Every variant moves elements as bits (any dtype, by element size) and is checked against
// copy_reference.
//
// Every variant first reduces the problem to its StridedPlan: size-1 dimensions dropped and
// neighbours merged where src continues one into the next, so that a permutation of a contiguous
// tensor keeps only the dimensions it really reorders, and then walks it by its kind:
//   rows       the innermost src stride is 1: contiguous rows of sizes[dims-1] elements, gathered
//              from wherever the outer dimensions put them (split and merge heads, slices of
//              step 1, expand of a row);
//   transpose  the innermost src stride is > 1 and another dimension (the pivot) has stride 1:
//              tiles of (pivot, innermost) are transposed (2-D transposes, NCHW <-> NHWC);
//   gather     neither: elements read src_strides[dims-1] apart (a slice x[:, ::k], k > 1) or
//              one element repeated (stride 0: an expanded column).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "flopscope/kernels/copy.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

struct StridedPlan {
  enum class Kind { rows, transpose, gather };
  int dims = 0;  // 0: a single element (numel 1) or nothing (numel 0)
  std::array<std::int64_t, kMaxDims> sizes{};
  std::array<std::int64_t, kMaxDims> src_strides{};  // in elements
  std::array<std::int64_t, kMaxDims> dst_strides{};  // row-major over sizes (dst is contiguous)
  std::int64_t numel = 0;
  std::int64_t element_size = 0;  // bytes
  Kind kind = Kind::rows;
  int pivot = -1;  // transpose: the dimension of src stride 1
};

// The plan of a problem that needs_contiguous_destination() accepts. Host code, no device access.
StridedPlan plan_strided_copy(const CopyProblem& problem);

// nullopt where dst is contiguous and src has dst's shape and element size: what every strided
// variant takes; else why not.
std::optional<std::string> needs_contiguous_destination(const CopyProblem& problem);

// CPU variants (kernels/cpu/strided.cpp) and CUDA variants (kernels/cuda/strided.cu; an empty
// table in builds without CUDA). CUDA variants enqueue on the stream and do not wait.
std::span<const CopyVariant> cpu_strided_variants();
std::span<const CopyVariant> cuda_strided_variants();

}  // namespace flopscope::kernels
