// Random numbers that are the same on every platform for one seed.
//
// The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11; the generator of cuRAND and of PyTorch's CUDA tensors), counter-based: draw i of a seed
// is philox(counter = i, key = seed), a pure function of integers, so a tensor's element i does not
// depend on the order, thread or device that fills it. std::*_distribution is not used: its
// algorithms differ between standard libraries.
//
// uniform(): exact integer arithmetic, identical everywhere. normal(): Box-Muller from two uniforms
// through std::log, std::sqrt and std::cos; sqrt is exact and every mainstream libm's log and cos
// are within an ulp of each other, so values agree to the last bit of double on mainstream
// platforms and exactly once rounded to f32 or narrower (save ties of probability ~1e-9).
#pragma once

#include <array>
#include <cstdint>

namespace flopscope {

// One Philox4x32-10 block: four 32-bit words from a 128-bit counter and a 64-bit key.
std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key);

// Draw `index` of the stream `seed`: uniform in [0, 1) on a grid of 2^-bits (bits in [1, 53]):
// with bits = the dtype's significand bits (53 f64, 24 f32, 11 f16, 8 bf16, 4 e4m3, 3 e5m2)
// every value is exactly representable, so rounding never produces 1.0.
double uniform(std::uint64_t seed, std::uint64_t index, int bits = 53);

// Draw `index` of the stream `seed`: standard normal (Box-Muller, cosine branch).
double normal(std::uint64_t seed, std::uint64_t index);

// Inverse of the error function on (-1, 1) (±inf at ±1): Giles' approximation refined by two
// Newton steps on std::erf; within a few ulps of double. Used by trunc_normal, as PyTorch does.
double erfinv(double y);

}  // namespace flopscope
