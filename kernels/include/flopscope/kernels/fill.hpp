// Inputs and outputs for benchmarks and tests alike (tests reach them without including bench/):
// 64-byte aligned host buffers, random fills that are reproducible from a seed (and never all
// zeros), and small-integer fills whose sums of products are exact. Threaded with OpenMP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

// 64-byte aligned host memory, first-touched in parallel (so pages land where threads run and
// the timed loop does not page-fault). Throws std::bad_alloc. Where set_huge_pages(true) was
// called, a buffer of 2 MiB or more is 2 MiB aligned and asked of the kernel in transparent huge
// pages (madvise): bench binaries' --huge-pages.
struct HostBuffer {
  explicit HostBuffer(std::size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  unsigned char* data = nullptr;
  std::size_t bytes = 0;
};

// Whether later HostBuffers of 2 MiB or more go in transparent huge pages (default: no, the
// system's own pages: what a program that does not ask gets).
void set_huge_pages(bool on);
bool huge_pages();

// The kernel's transparent huge page mode (/sys/kernel/mm/transparent_hugepage/enabled: "always",
// "madvise" or "never"); empty where the file is missing (no THP support).
std::string transparent_huge_pages_mode();

// Random bytes, a pure function of (seed, byte index): hash_index(seed, i) per 8-byte word.
void fill_random_bytes(void* data, std::size_t bytes, std::uint64_t seed);

// Every element of a host view set to a value uniform in [-1, 1) rounded to its dtype (for
// arithmetic: no NaN or inf, unlike random bytes), a pure function of (seed, element index in
// row-major order).
void fill_uniform(const TensorRef& tensor, std::uint64_t seed);

// Every element of a host view set to a small integer in [-2, 2] (small_integer in hash.hpp):
// exact in every dtype, so a matmul's sums of products up to k = 2^20 are exact in f32.
void fill_small_integers(const TensorRef& tensor, std::uint64_t seed);

}  // namespace flopscope::kernels
