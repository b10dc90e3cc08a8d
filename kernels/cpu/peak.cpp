// Arithmetic-peak and bandwidth kernels on the CPU (bench_peak).
//
// Kernels (kPeakChainsAvx512 = 16 independent accumulator chains in zmm registers,
// kPeakChainsAvx2 = 12 in ymm registers; peak.hpp says why):
//   fma_avx512 f64 / f32   vfmadd231pd / ps zmm
//   fma_avx2   f64 / f32   vfmadd231pd / ps ymm (CPUs without AVX-512)
//   dpbf16     bf16        vdpbf16ps zmm: per f32 lane acc += a0*b0 + a1*b1 (4 FLOPs)
//   fma_fp16   f16         vfmadd231ph zmm: 32 half lanes
//   amx_bf16   bf16        TDPBF16PS on 4 accumulator tiles (16 x 16 f32 each), A and B tiles fixed:
//                          per step and tile 16 x 16 x 32 multiply-adds (the AMX unit's bf16 rate)
// Triad: a = b + s*c on double, streaming stores above the LLC, one chunk per thread.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <cstring>
#include <stdexcept>
#include <string>

#include "flopscope/accounting.hpp"
#include "flopscope/cpu_info.hpp"
#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/peak.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/tensor.hpp"
#include "amx.hpp"
#include "parallel.hpp"

namespace flopscope::kernels {

namespace {

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

// AMX: tiles 0-3 accumulate (16 rows of 16 f32), tile 4 holds A (16 rows of 32 bf16), tile 5 B
// (16 rows of 16 bf16 pairs, VNNI order): every element of C gains 32 products a*b a step. Four
// accumulators cover TDPBF16PS's latency at one issue per tile-sized slot of the unit.
constexpr int kAmxAccumulators = 4;

__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bf16"))) double amx_bf16(std::uint64_t trips, double start,
                                                                               double a, double b, double* out) {
  amx_begin();  // tiles 16 x 64 bytes (amx.hpp)
  alignas(64) float c[kAmxAccumulators][16 * 16];
  alignas(64) std::uint16_t pa[16 * 32], pb[16 * 32];
  for (int t = 0; t < kAmxAccumulators; ++t)
    for (float& x : c[t]) x = float(start + t);
  // a and b are bf16-exact (bench_peak: -1, 1)
  std::fill(std::begin(pa), std::end(pa), std::uint16_t(encode_bits(DType::bf16, a)));
  std::fill(std::begin(pb), std::end(pb), std::uint16_t(encode_bits(DType::bf16, b)));
  _tile_loadd(0, c[0], 64);
  _tile_loadd(1, c[1], 64);
  _tile_loadd(2, c[2], 64);
  _tile_loadd(3, c[3], 64);
  _tile_loadd(4, pa, 64);
  _tile_loadd(5, pb, 64);
  for (std::uint64_t t = 0; t < trips; ++t) {
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 5);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 5);
  }
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  _tile_stored(2, c[2], 64);
  _tile_stored(3, c[3], 64);
  amx_end();
  *out = double(c[0][0]) + double(c[1][0]) * 0.0 + double(c[2][0]) * 0.0 + double(c[3][0]) * 0.0;
  return double(trips) * kAmxAccumulators * 16 * 16 * 32 * 2;
}

using ChainKernel = double (*)(std::uint64_t trips, double start, double a, double b, double* out);

// One call: the chains on every OpenMP thread, each writing lane 0 of its chain 0 to out[thread].
template <ChainKernel Kernel>
void run_chains(const FmaChainProblem& p, Stream) {
  double* out = p.out.ptr<double>();
  const int threads = static_cast<int>(p.out.numel());
#pragma omp parallel num_threads(threads)
  Kernel(p.trips, p.start, p.a, p.b, out + omp_get_thread_num());
}

template <const char*... Flags>
std::optional<std::string> cpu_needs(const FmaChainProblem& p) {
  if (p.out.dtype != DType::f64 || !p.out.is_contiguous() || p.out.numel() < 1)
    return "needs a contiguous f64 output of one value per thread, not " + p.out.str();
  return cpu_lacks({std::string_view(Flags)...});
}

template <ComputeMode Mode>
bool computes(const FmaChainProblem& p) {
  return p.mode == Mode;
}

constexpr char kAvx2[] = "avx2", kFma[] = "fma", kAvx512f[] = "avx512f", kAvx512Bf16[] = "avx512_bf16",
               kAvx512Fp16[] = "avx512_fp16", kAmxTile[] = "amx_tile", kAmxBf16[] = "amx_bf16";

std::optional<std::string> amx_unavailable(const FmaChainProblem& p) {
  if (auto lacks = cpu_needs<kAvx512f, kAvx512Bf16, kAmxTile, kAmxBf16>(p)) return lacks;
  return amx_refused();
}
using M = ComputeMode;
constexpr auto cpu = Device::Kind::cpu;

const std::array<FmaChainVariant, 7> kChains = {{
    {"fma_avx512", "16 chains of vfmadd231pd on zmm", cpu, cpu_needs<kAvx512f>, direct<FmaChainProblem, run_chains<fma512_f64>>,
     computes<M::f64>, {"vfmadd231pd zmm", M::f64, kPeakChainsAvx512, 8, 2}},
    {"fma_avx512", "16 chains of vfmadd231ps on zmm", cpu, cpu_needs<kAvx512f>, direct<FmaChainProblem, run_chains<fma512_f32>>,
     computes<M::f32>, {"vfmadd231ps zmm", M::f32, kPeakChainsAvx512, 16, 2}},
    {"fma_avx2", "12 chains of vfmadd231pd on ymm", cpu, cpu_needs<kAvx2, kFma>, direct<FmaChainProblem, run_chains<fma256_f64>>,
     computes<M::f64>, {"vfmadd231pd ymm", M::f64, kPeakChainsAvx2, 4, 2}},
    {"fma_avx2", "12 chains of vfmadd231ps on ymm", cpu, cpu_needs<kAvx2, kFma>, direct<FmaChainProblem, run_chains<fma256_f32>>,
     computes<M::f32>, {"vfmadd231ps ymm", M::f32, kPeakChainsAvx2, 8, 2}},
    {"dpbf16", "16 chains of vdpbf16ps on zmm (two bf16 multiply-adds per f32 lane)", cpu,
     cpu_needs<kAvx512f, kAvx512Bf16>, direct<FmaChainProblem, run_chains<dpbf16>>, computes<M::bf16>,
     {"vdpbf16ps zmm", M::bf16, kPeakChainsAvx512, 16, 4}},
    {"fma_fp16", "16 chains of vfmadd231ph on zmm", cpu, cpu_needs<kAvx512f, kAvx512Fp16>,
     direct<FmaChainProblem, run_chains<fma_fp16>>, computes<M::f16>, {"vfmadd231ph zmm", M::f16, kPeakChainsAvx512, 32, 2}},
    {"amx_bf16", "4 accumulator tiles of AMX TDPBF16PS (16 x 16 f32 each, 32 bf16 products an element a step)", cpu,
     amx_unavailable, direct<FmaChainProblem, run_chains<amx_bf16>>, computes<M::bf16>,
     {"tdpbf16ps tmm", M::bf16, kAmxAccumulators, 16 * 16, 32 * 2}},
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


void triad_cpu(const TriadProblem& p, Stream) {
  double *a = p.a.ptr<double>();
  const double *b = p.b.ptr<double>(), *c = p.c.ptr<double>();
  const double scalar = p.scalar;
  const auto count = static_cast<std::size_t>(p.a.numel());
  const bool streaming = 3 * count * sizeof(double) > cpu_streaming_threshold_bytes();
  const bool avx512 = !cpu_lacks({"avx512f"});
  parallel_chunks(count, 8, 0, [&](std::size_t begin, std::size_t n) {  // 8 doubles: a cache line
    if (avx512) {
      triad_chunk_avx512(a + begin, b + begin, c + begin, scalar, n, streaming);
    } else {
      for (std::size_t i = begin; i < begin + n; ++i) a[i] = std::fma(scalar, c[i], b[i]);
    }
  });
}

std::optional<std::string> triad_f64_only(const TriadProblem& p) {
  for (const TensorRef* t : {&p.a, &p.b, &p.c})
    if (t->dtype != DType::f64 || !t->is_contiguous() || t->numel() != p.a.numel())
      return "needs contiguous f64 operands of one size, not " + t->str();
  return std::nullopt;
}

const std::array<TriadVariant, 1> kTriad = {{
    {"triad", "a = b + s*c on f64, AVX-512 FMA per OpenMP thread, streaming stores above the LLC", cpu, triad_f64_only,
     direct<TriadProblem, triad_cpu>},
}};

}  // namespace

std::span<const FmaChainVariant> cpu_fma_chain_variants() { return kChains; }
std::span<const TriadVariant> cpu_triad_variants() { return kTriad; }

std::int64_t fma_chain_flops(const FmaChainVariant& variant, const FmaChainProblem& problem) {
  const FmaChainInfo& info = variant.info;
  return flopscope::fma_chain_flops(problem.out.numel(), static_cast<std::int64_t>(problem.trips), info.chains,
                                    info.lanes, info.flops_per_lane);
}

// The same recurrence one scalar step at a time (an FMA rounds once, so the vector lanes must
// match bit for bit).
double fma_chain_reference(ComputeMode mode, std::uint64_t trips, double start, double a, double b, int products) {
  switch (mode) {
    case ComputeMode::f64: {
      double acc = start;
      for (std::uint64_t t = 0; t < trips; ++t) acc = std::fma(acc, a, b);
      return acc;
    }
    case ComputeMode::f32: {
      float acc = float(start);
      for (std::uint64_t t = 0; t < trips; ++t) acc = std::fma(acc, float(a), float(b));
      return acc;
    }
    case ComputeMode::bf16: {
      // bf16 dot product: the inputs must be bf16-exact and the products and sums exact in f32
      // (bench_peak uses a = -1, b = 1); then acc + a*b + a*b in f32.
      float acc = float(start);
      for (std::uint64_t t = 0; t < trips; ++t)
        for (int product = 0; product < products; ++product) acc = acc + float(a) * float(b);
      return acc;
    }
    case ComputeMode::f16: {
      _Float16 acc = static_cast<_Float16>(start);
      const _Float16 ha = static_cast<_Float16>(a), hb = static_cast<_Float16>(b);
      for (std::uint64_t t = 0; t < trips; ++t)  // an f32 fma of halves is exact: one rounding, to f16
        acc = static_cast<_Float16>(std::fma(float(acc), float(ha), float(hb)));
      return double(acc);
    }
    default: throw std::invalid_argument("fma_chain_reference: no FMA chain computes " +
                                         std::string(compute_mode_name(mode)));
  }
}

void triad_reference(const TriadProblem& p) {
  const auto count = p.a.numel();
  for (std::int64_t i = 0; i < count; ++i) {
    const double b = load_element(p.b.ptr<unsigned char>() + i * std::int64_t(p.b.element_size()), p.b.dtype);
    const double c = load_element(p.c.ptr<unsigned char>() + i * std::int64_t(p.c.element_size()), p.c.dtype);
    store_element(p.a.ptr<unsigned char>() + i * std::int64_t(p.a.element_size()), p.a.dtype, std::fma(p.scalar, c, b));
  }
}

}  // namespace flopscope::kernels
