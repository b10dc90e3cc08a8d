// Copy: dst = src, element for element, for operands of one shape and dtype (TensorRefs). The
// contiguous-copy variants here need both operands contiguous (their availability says so
// otherwise) and treat elements as bytes, so every dtype is covered by its element size.
#pragma once

#include <cstddef>
#include <span>

#include "flopscope/kernels/variant.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

struct CopyProblem {
  TensorRef dst;
  TensorRef src;
};
using CopyVariant = Variant<CopyProblem>;

// The reference: one element at a time through the strided iterator, any strides. Host operands.
// Deliberately simple.
void copy_reference(const CopyProblem& problem);

// CPU variants (kernels/cpu/copy.cpp) and CUDA variants (kernels/cuda/copy.cu; an empty table in
// builds without CUDA). CUDA variants enqueue on the stream and do not wait.
std::span<const CopyVariant> cpu_copy_variants();
std::span<const CopyVariant> cuda_copy_variants();

// nullopt where both operands are contiguous, of one dtype size and one element count; else why
// not: the availability of every contiguous-copy variant.
std::optional<std::string> needs_contiguous(const CopyProblem& problem);

// Copies whose source plus destination exceed this use non-temporal stores in the "simd" variant:
// the last-level cache size of this machine (read from sysfs), 32 MiB where unknown.
std::size_t cpu_streaming_threshold_bytes();

}  // namespace flopscope::kernels
