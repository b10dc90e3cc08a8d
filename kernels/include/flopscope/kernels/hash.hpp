// The random bits behind every benchmark input, one function for host and device alike, so a
// host-side reference can recompute exactly what a device fill wrote.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FLOPSCOPE_HOST_DEVICE __host__ __device__
#else
#define FLOPSCOPE_HOST_DEVICE
#endif

namespace flopscope::kernels {

// splitmix64 of (seed, index).
FLOPSCOPE_HOST_DEVICE inline std::uint64_t hash_index(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// An integer in [-2, 2] as float: exact in every dtype, and products summed over k <= 2^20
// stay exact in f32 (GEMM inputs whose result can be checked exactly).
FLOPSCOPE_HOST_DEVICE inline float small_integer(std::uint64_t index, std::uint64_t seed) {
  return float(int(hash_index(seed, index) % 5) - 2);
}

}  // namespace flopscope::kernels
