// Arithmetic-peak and bandwidth kernels on the CPU (bench_peak).
//
// Kernels (kPeakChainsAvx512 = 16 independent accumulator chains in zmm registers,
// kPeakChainsAvx2 = 12 in ymm registers; peak.hpp says why):
//   fma_avx512 f64 / f32   vfmadd231pd / ps zmm
//   fma_avx2   f64 / f32   vfmadd231pd / ps ymm (CPUs without AVX-512)
//   dpbf16     bf16        vdpbf16ps zmm: per f32 lane acc += a0*b0 + a1*b1 (4 FLOPs)
//   fma_fp16   f16         vfmadd231ph zmm: 32 half lanes
// Triad: a = b + s*c on double, streaming stores above the LLC, one chunk per thread.
#include <immintrin.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstring>

#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/peak.hpp"
#include "parallel.hpp"

namespace flopscope::kernels {

namespace {

bool has_avx512() { return __builtin_cpu_supports("avx512f"); }
bool has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool has_bf16() { return __builtin_cpu_supports("avx512bf16"); }
bool has_fp16() { return __builtin_cpu_supports("avx512fp16"); }

// The chains are written out so the compiler keeps each in its own register. Chain i starts at
// start + i: identical chains would be merged into one by common-subexpression elimination.
#define FLOPSCOPE_12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define FLOPSCOPE_16(X) FLOPSCOPE_12(X) X(12) X(13) X(14) X(15)
static_assert(kPeakChainsAvx512 == 16 && kPeakChainsAvx2 == 12, "the FLOPSCOPE_16/12 macros write the chains out");

__attribute__((target("avx512f"))) double fma512_f64(std::uint64_t trips, double start, double a, double b,
                                                     double* out) {
  const __m512d va = _mm512_set1_pd(a), vb = _mm512_set1_pd(b);
#define DECL(i) __m512d acc##i = _mm512_set1_pd(start + i);
#define STEP(i) acc##i = _mm512_fmadd_pd(acc##i, va, vb);
  FLOPSCOPE_16(DECL)
  for (std::uint64_t t = 0; t < trips; ++t) {
    FLOPSCOPE_16(STEP)
  }
#define SUM(i) +_mm512_cvtsd_f64(acc##i) * 0.0
  *out = _mm512_cvtsd_f64(acc0) FLOPSCOPE_16(SUM);
#undef DECL
#undef STEP
#undef SUM
  return double(trips) * kPeakChainsAvx512 * 8 * 2;
}

__attribute__((target("avx512f"))) double fma512_f32(std::uint64_t trips, double start, double a, double b,
                                                     double* out) {
  const __m512 va = _mm512_set1_ps(float(a)), vb = _mm512_set1_ps(float(b));
#define DECL(i) __m512 acc##i = _mm512_set1_ps(float(start + i));
#define STEP(i) acc##i = _mm512_fmadd_ps(acc##i, va, vb);
  FLOPSCOPE_16(DECL)
  for (std::uint64_t t = 0; t < trips; ++t) {
    FLOPSCOPE_16(STEP)
  }
#define SUM(i) +double(_mm512_cvtss_f32(acc##i)) * 0.0
  *out = double(_mm512_cvtss_f32(acc0)) FLOPSCOPE_16(SUM);
#undef DECL
#undef STEP
#undef SUM
  return double(trips) * kPeakChainsAvx512 * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma256_f64(std::uint64_t trips, double start, double a, double b,
                                                      double* out) {
  const __m256d va = _mm256_set1_pd(a), vb = _mm256_set1_pd(b);
#define DECL(i) __m256d acc##i = _mm256_set1_pd(start + i);
#define STEP(i) acc##i = _mm256_fmadd_pd(acc##i, va, vb);
  FLOPSCOPE_12(DECL)
  for (std::uint64_t t = 0; t < trips; ++t) {
    FLOPSCOPE_12(STEP)
  }
#define SUM(i) +_mm256_cvtsd_f64(acc##i) * 0.0
  *out = _mm256_cvtsd_f64(acc0) FLOPSCOPE_12(SUM);
#undef DECL
#undef STEP
#undef SUM
  return double(trips) * kPeakChainsAvx2 * 4 * 2;
}

__attribute__((target("avx2,fma"))) double fma256_f32(std::uint64_t trips, double start, double a, double b,
                                                      double* out) {
  const __m256 va = _mm256_set1_ps(float(a)), vb = _mm256_set1_ps(float(b));
#define DECL(i) __m256 acc##i = _mm256_set1_ps(float(start + i));
#define STEP(i) acc##i = _mm256_fmadd_ps(acc##i, va, vb);
  FLOPSCOPE_12(DECL)
  for (std::uint64_t t = 0; t < trips; ++t) {
    FLOPSCOPE_12(STEP)
  }
#define SUM(i) +double(_mm256_cvtss_f32(acc##i)) * 0.0
  *out = double(_mm256_cvtss_f32(acc0)) FLOPSCOPE_12(SUM);
#undef DECL
#undef STEP
#undef SUM
  return double(trips) * kPeakChainsAvx2 * 8 * 2;
}

// bf16 pairs: a and b are broadcast as bf16 (their top 16 bits as f32); acc += a*b + a*b.
__attribute__((target("avx512f,avx512bf16"))) double dpbf16(std::uint64_t trips, double start, double a, double b,
                                                            double* out) {
  const __m512bh va = _mm512_cvtne2ps_pbh(_mm512_set1_ps(float(a)), _mm512_set1_ps(float(a)));
  const __m512bh vb = _mm512_cvtne2ps_pbh(_mm512_set1_ps(float(b)), _mm512_set1_ps(float(b)));
#define DECL(i) __m512 acc##i = _mm512_set1_ps(float(start + i));
#define STEP(i) acc##i = _mm512_dpbf16_ps(acc##i, va, vb);
  FLOPSCOPE_16(DECL)
  for (std::uint64_t t = 0; t < trips; ++t) {
    FLOPSCOPE_16(STEP)
  }
#define SUM(i) +double(_mm512_cvtss_f32(acc##i)) * 0.0
  *out = double(_mm512_cvtss_f32(acc0)) FLOPSCOPE_16(SUM);
#undef DECL
#undef STEP
#undef SUM
  return double(trips) * kPeakChainsAvx512 * 16 * 4;
}

__attribute__((target("avx512f,avx512fp16"))) double fma_fp16(std::uint64_t trips, double start, double a, double b,
                                                               double* out) {
  const __m512h va = _mm512_set1_ph(static_cast<_Float16>(a)), vb = _mm512_set1_ph(static_cast<_Float16>(b));
#define DECL(i) __m512h acc##i = _mm512_set1_ph(static_cast<_Float16>(start + i));
#define STEP(i) acc##i = _mm512_fmadd_ph(acc##i, va, vb);
  FLOPSCOPE_16(DECL)
  for (std::uint64_t t = 0; t < trips; ++t) {
    FLOPSCOPE_16(STEP)
  }
#define SUM(i) +double(_mm512_cvtsh_h(acc##i)) * 0.0
  *out = double(_mm512_cvtsh_h(acc0)) FLOPSCOPE_16(SUM);
#undef DECL
#undef STEP
#undef SUM
  return double(trips) * kPeakChainsAvx512 * 32 * 2;
}

#undef FLOPSCOPE_16
#undef FLOPSCOPE_12

// References: the same recurrence one scalar step at a time (an FMA rounds once, so the vector
// lanes must match bit for bit).
double reference_f64(std::uint64_t trips, double start, double a, double b) {
  double acc = start;
  for (std::uint64_t t = 0; t < trips; ++t) acc = std::fma(acc, a, b);
  return acc;
}

double reference_f32(std::uint64_t trips, double start, double a, double b) {
  float acc = float(start);
  for (std::uint64_t t = 0; t < trips; ++t) acc = std::fma(acc, float(a), float(b));
  return acc;
}

// bf16 dot product: the inputs must be bf16-exact and the products and sums exact in f32
// (bench_peak uses a = -1, b = 1 ... see its comment); then acc + a*b + a*b in f32.
double reference_bf16(std::uint64_t trips, double start, double a, double b) {
  float acc = float(start);
  for (std::uint64_t t = 0; t < trips; ++t) acc = acc + float(a) * float(b) + float(a) * float(b);
  return acc;
}

double reference_f16(std::uint64_t trips, double start, double a, double b) {
  _Float16 acc = static_cast<_Float16>(start);
  const _Float16 ha = static_cast<_Float16>(a), hb = static_cast<_Float16>(b);
  for (std::uint64_t t = 0; t < trips; ++t)
    acc = static_cast<_Float16>(std::fma(float(acc), float(ha), float(hb)));  // f32 fma of halves is exact, one rounding
  return double(acc);
}

constexpr std::array<CpuPeakKernel, 6> kKernels = {{
    {"fma_avx512", "f64", "vfmadd231pd zmm", kPeakChainsAvx512, has_avx512, fma512_f64, reference_f64},
    {"fma_avx512", "f32", "vfmadd231ps zmm", kPeakChainsAvx512, has_avx512, fma512_f32, reference_f32},
    {"fma_avx2", "f64", "vfmadd231pd ymm", kPeakChainsAvx2, has_avx2_fma, fma256_f64, reference_f64},
    {"fma_avx2", "f32", "vfmadd231ps ymm", kPeakChainsAvx2, has_avx2_fma, fma256_f32, reference_f32},
    {"dpbf16", "bf16", "vdpbf16ps zmm", kPeakChainsAvx512, has_bf16, dpbf16, reference_bf16},
    {"fma_fp16", "f16", "vfmadd231ph zmm", kPeakChainsAvx512, has_fp16, fma_fp16, reference_f16},
}};

__attribute__((target("avx512f"))) void triad_chunk_avx512(double* a, const double* b, const double* c, double s,
                                                           std::size_t n, bool streaming) {
  std::size_t i = 0;
  for (; i < n && (reinterpret_cast<std::uintptr_t>(a + i) & 63); ++i) a[i] = b[i] + s * c[i];
  const __m512d vs = _mm512_set1_pd(s);
  if (streaming) {
    for (; i + 8 <= n; i += 8)
      _mm512_stream_pd(a + i, _mm512_fmadd_pd(vs, _mm512_loadu_pd(c + i), _mm512_loadu_pd(b + i)));
    _mm_sfence();
  } else {
    for (; i + 8 <= n; i += 8)
      _mm512_store_pd(a + i, _mm512_fmadd_pd(vs, _mm512_loadu_pd(c + i), _mm512_loadu_pd(b + i)));
  }
  for (; i < n; ++i) a[i] = std::fma(s, c[i], b[i]);
}

}  // namespace

std::span<const CpuPeakKernel> cpu_peak_kernels() { return kKernels; }

void triad_f64(double* a, const double* b, const double* c, double scalar, std::size_t count) {
  const bool streaming = 3 * count * sizeof(double) > cpu_streaming_threshold_bytes();
  const bool avx512 = has_avx512();
  parallel_chunks(count, 8, 0, [&](std::size_t begin, std::size_t n) {  // 8 doubles: a cache line
    if (avx512) {
      triad_chunk_avx512(a + begin, b + begin, c + begin, scalar, n, streaming);
    } else {
      for (std::size_t i = begin; i < begin + n; ++i) a[i] = std::fma(scalar, c[i], b[i]);
    }
  });
}

}  // namespace flopscope::kernels
