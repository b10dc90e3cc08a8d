// Contiguous copy: dst[i] = src[i] for n elements of `element_size` bytes. A contiguous copy
// does not care what the bits mean, so every dtype is covered by its element size.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace flopscope::kernels {

using CopyFn = void (*)(void* dst, const void* src, std::size_t count, std::size_t element_size);

struct CopyVariant {
  std::string_view name;
  std::string_view description;
  CopyFn run;
  bool (*available)();  // false where the CPU lacks what the variant needs
};

// The reference: one element at a time, byte by byte. Deliberately simple.
void copy_reference(void* dst, const void* src, std::size_t count, std::size_t element_size);

// CPU variants (kernels/cpu/copy.cpp).
std::span<const CopyVariant> cpu_copy_variants();

// Copies whose source plus destination exceed this use non-temporal stores in the "simd" variant:
// the last-level cache size of this machine (read from sysfs), 32 MiB where unknown.
std::size_t cpu_streaming_threshold_bytes();

}  // namespace flopscope::kernels

#ifdef FLOPSCOPE_HAVE_CUDA
namespace flopscope::kernels::cuda {

// CUDA variants (kernels/cuda/copy.cu). `dst` and `src` are device pointers; the copy is
// enqueued on `stream` (a cudaStream_t passed as void*) and not waited for.
using CudaCopyFn = void (*)(void* dst, const void* src, std::size_t count, std::size_t element_size,
                            void* stream);

struct CudaCopyVariant {
  std::string_view name;
  std::string_view description;
  CudaCopyFn run;
};

std::span<const CudaCopyVariant> copy_variants();

}  // namespace flopscope::kernels::cuda
#endif
