// Kernels that measure ceilings: arithmetic peaks (independent FMA chains at the widest vectors)
// and memory bandwidth (STREAM triad). bench_peak times them; tests check their results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace flopscope::kernels {

// Runs `trips` iterations of `chains` independent chains acc = fma(acc, a, b) per lane on the
// calling thread and writes lane 0 of chain 0 to *out. Returns FLOPs done. Enough chains to
// cover FMA latency x units (4 x 2: 8 in flight), and no more than the registers hold: 16 with
// AVX-512's 32 registers, 12 with AVX2's 16 (a chain spilled to the stack adds a store and a
// load to its latency and halved the AVX2 kernels' rate on a Zen 4).
inline constexpr int kPeakChainsAvx512 = 16;
inline constexpr int kPeakChainsAvx2 = 12;

struct CpuPeakKernel {
  std::string_view name;     // "fma_avx512"
  std::string_view compute;  // "f32", "f64", "bf16", "f16"
  std::string_view instruction;
  int chains;  // independent accumulators
  bool (*available)();
  // acc starts at `start`; returns FLOPs; *out = final lane-0 value (as double)
  double (*run)(std::uint64_t trips, double start, double a, double b, double* out);
  // What run() leaves in *out, computed one scalar step at a time (the reference).
  double (*reference)(std::uint64_t trips, double start, double a, double b);
};

std::span<const CpuPeakKernel> cpu_peak_kernels();

// STREAM triad: a[i] = b[i] + scalar * c[i], threaded, streaming stores above the LLC size.
void triad_f64(double* a, const double* b, const double* c, double scalar, std::size_t count);

}  // namespace flopscope::kernels

#ifdef FLOPSCOPE_HAVE_CUDA
namespace flopscope::kernels::cuda {

// Independent FMA chains on every thread of a full grid; writes each thread's lane value to
// `out` (device memory, one value per thread: blocks x threads). Returns FLOPs enqueued.
double fma_peak_f32(float* out, int blocks, int threads, int trips, float a, float b, void* stream);
double fma_peak_f64(double* out, int blocks, int threads, int trips, double a, double b, void* stream);
inline constexpr int kCudaPeakChains = 8;
void triad_f32(float* a, const float* b, const float* c, float scalar, std::size_t count, void* stream);

// Tensor-core GEMM through cuBLAS / cuBLASLt: D (m x n, f32, column-major) = A^T (k x m) B (k x n),
// inputs of `dtype` ("tf32" = f32 storage with TF32 math, "f16", "bf16", "f8e4m3", "f8e5m2").
// Returns an empty string on success, else the cuBLAS error. Handles are created once per call
// site via GemmPlan.
struct GemmPlan;
GemmPlan* gemm_plan_create(std::string_view dtype, int m, int n, int k, std::string* error);
std::string gemm_run(GemmPlan* plan, const void* a, const void* b, float* d, void* stream);
void gemm_plan_destroy(GemmPlan* plan);
// Fills a device buffer of `count` elements of `dtype` with small integers in [-2, 2], exact in
// every dtype (products and sums up to k = 2^20 stay exact in f32).
void fill_small_integers(void* data, std::string_view dtype, std::size_t count, std::uint64_t seed);

}  // namespace flopscope::kernels::cuda
#endif
