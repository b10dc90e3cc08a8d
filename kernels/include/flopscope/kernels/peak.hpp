// Kernels that measure ceilings (bench_peak): arithmetic peaks by independent FMA chains at the
// widest vectors, and memory bandwidth by the STREAM triad. Tests check their results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "flopscope/compute_mode.hpp"
#include "flopscope/kernels/variant.hpp"
#include "flopscope/tensor_ref.hpp"

namespace flopscope::kernels {

// ---- FMA chains ----

// `trips` iterations of independent chains acc = fma(acc, a, b) in every lane, on each of
// out.numel() threads (CPU: OpenMP threads; CUDA: the grid's threads, 256 a block), chain i of a
// thread starting from its own value. out (f64, contiguous) receives one value per thread: lane 0
// of chain 0 on the CPU, the sum of the thread's chains on CUDA; the tests and the bench check it
// against fma_chain_reference.
struct FmaChainProblem {
  TensorRef out;
  ComputeMode mode = ComputeMode::f32;
  std::uint64_t trips = 0;
  double start = 0, a = 0, b = 0;
};

struct FmaChainInfo {
  std::string_view instruction;  // "vfmadd231ps zmm"
  ComputeMode mode;              // the one mode the kernel computes
  int chains;                    // independent accumulators per thread
  int lanes;                     // vector lanes per chain
  int flops_per_lane;            // per step: 2 (FMA), 4 (vdpbf16ps: two multiply-adds), 64 (an AMX tile)
};
using FmaChainVariant = Variant<FmaChainProblem, FmaChainInfo>;

// Enough chains to cover FMA latency x units (4 x 2: 8 in flight), and no more than the registers
// hold: 16 with AVX-512's 32 registers, 12 with AVX2's 16 (a chain spilled to the stack adds a
// store and a load to its latency and halved the AVX2 kernels' rate on a Zen 4).
inline constexpr int kPeakChainsAvx512 = 16;
inline constexpr int kPeakChainsAvx2 = 12;
inline constexpr int kCudaPeakChains = 8;
inline constexpr int kCudaPeakThreadsPerBlock = 256;

std::span<const FmaChainVariant> cpu_fma_chain_variants();
std::span<const FmaChainVariant> cuda_fma_chain_variants();

// FLOPs of one call of `variant` on `problem`: threads x trips x chains x lanes x FLOPs per lane.
std::int64_t fma_chain_flops(const FmaChainVariant& variant, const FmaChainProblem& problem);

// What one chain of `mode` holds after `trips` steps from `start`, one scalar step at a time (an
// FMA rounds once, so every lane must match it bit for bit): f64/f32 acc = fma(acc, a, b);
// bf16 acc + a*b, `products` times a step, in f32 (a, b bf16-exact: vdpbf16ps 2, an AMX tile's
// TDPBF16PS 32, FmaChainInfo::flops_per_lane / 2); f16 fma rounded to f16.
double fma_chain_reference(ComputeMode mode, std::uint64_t trips, double start, double a, double b, int products = 2);

// ---- STREAM triad ----

// a = b + scalar * c, all of one dtype (f64 on the CPU, f32 on CUDA), contiguous.
struct TriadProblem {
  TensorRef a, b, c;
  double scalar = 3.0;
};
using TriadVariant = Variant<TriadProblem>;

std::span<const TriadVariant> cpu_triad_variants();
std::span<const TriadVariant> cuda_triad_variants();
// Host operands, element by element: the reference.
void triad_reference(const TriadProblem& problem);

}  // namespace flopscope::kernels
