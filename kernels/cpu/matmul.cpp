// Matmul on the CPU: C (m x n) = A (m x k) · B (k x n), operands of any strides (a layout is a
// view: NT's B and TN's A are transposed views), every compute mode but tf32 (a GPU mode).
//
// Variants (one row each in kVariants at the end):
//   naive        the reference loop itself: one output at a time, products and sums in f64.
//   blocked      cache blocking (BLIS's five loops) with A and B packed into panels (decoded to
//                f32, or f64, while packing, through any strides), and a plain C++ 4 x 16 (f64:
//                4 x 8) inner kernel the compiler vectorizes for baseline x86-64 (SSE2); OpenMP
//                as below.
//   microkernel  blocked's loops and panels, plus a register-blocked micro-kernel at the widest
//                vectors the CPU has, chosen at run time: AVX-512 6 x 64 (f32) / 6 x 32 (f64),
//                else AVX2 6 x 16 / 6 x 8, with accumulators held in registers for a whole k
//                block (one template, matmul_fma.inc, compiled for each ISA). Narrow dtypes (f16,
//                bf16, fp8) are decoded to f32 while packing and multiplied by the f32 kernel:
//                emulated (the label says so).
//   microkernel_dpbf16  bf16 only: A and B packed as bf16 pairs along k, multiplied by AVX512_BF16
//                vdpbf16ps (two bf16 products per f32 lane, accumulated in f32), 6 x 64.
//   microkernel_amx     bf16 only: AMX tiles (Note [AMX tiles]): TDPBF16PS on a 32 x 32 C tile held
//                as four 16 x 16 f32 tiles, A in rows of 32 k, B in VNNI pairs; where the CPU has
//                AMX and the OS grants its tile data (the others keep microkernel_dpbf16).
//   microkernel_fp16    f16 only: AVX512-FP16 vfmadd231ph on 32 half lanes, the products summed in
//                f16 over kFp16Block (16) k steps and then added to f32 accumulators, 8 x 32:
//                twice the f32 rate, 16 f16 roundings per block (matmul_tolerance allows for
//                them), and partial sums that overflow past f16's 65504. Not run here yet: no
//                CPU with AVX512-FP16 was at hand (the tests run it where there is one).
//   onednn       oneDNN's matmul primitive (what PyTorch runs on the CPU); matmul_vendor.cpp.
//   openblas     OpenBLAS cblas_sgemm / cblas_dgemm (what numpy runs); matmul_vendor.cpp.
//
// Note [micro-tiles]: on AVX-512 a tile is 6 rows of 4 vectors: 24 accumulators, 4 B loads and 6
// broadcasts of A a step. Beside 14 rows of 2 vectors (28 accumulators, 2 loads and 14
// broadcasts a step) it was faster on Zen 4, side by side in one process: f32 1024^3 +3.6% on one
// thread, +2-4.5% on two; f64 +7% / +4%; bf16 (vdpbf16ps) +4-5.6% at 1024^3, +2% at 2048^3.
// Every loop over a tile's rows and vectors carries `#pragma GCC unroll`, the zeroing and the store
// of C too: left to GCC 12, those two loops kept the accumulators in a stack array (24 stores in,
// 24 stores and 24 loads out of every call, `objdump -d` of the kernel); unrolled, they stay in
// registers. Zen 4, two threads, binaries alternated twice: f32 256^3 162.5/165.3 -> 159.9/161.2
// us, bf16 (vdpbf16ps) 83.4/85.1 -> 80.1/81.6 us; within noise at 1024^3 (128 to 512 k steps a call).
// The AVX2 kernel had half its 12 accumulators on the stack inside the k loop too (an FMA, a load
// and a store each): FLOPSCOPE_MATMUL_ISA=avx2 on the same Zen 4, f32 256^3 371/376 -> 179/179 us,
// 1024^3 22.7/22.9 -> 10.2/10.1 ms; f64 1024^3 45.6/45.6 -> 21.4/21.1 ms. The AVX512-FP16 kernel's
// loops are unrolled the same way (no CPU with it at hand; `objdump -d` shows no zmm on the stack).
//
// Note [the loops]: as BLIS's, written for row-major C with vectors along n (BLIS computes the
// transposed problem). C is split into one block per OpenMP thread (by rows or columns, whichever
// packs less: column_ways), and each thread runs the loops on its block alone: for each A panel of mc rows
// and k block of kc it packs the panel (mr-row slivers, k-major), then for each B block of kc x
// nc (nr-column slivers, sized to stay in that core's L2: Note [blocking]) it packs the block and runs the
// micro-kernel over A slivers x B slivers: the B block is reused from L2 by every A sliver, each
// A sliver (mr x kc) by every B sliver of the block. A B block of unit column stride is packed a
// row at a time (pack_b_rows: reads that stream), its slivers a cache line apart (sliver_pitch).
// Sharing one packed A panel between the threads of a column split (each packing half, a barrier
// per panel) was tried: no change at 1024^3 or 2048^3 on Zen 4 (+-0.5%), so no thread waits.
// Nor one B block packed by the threads of a row split together, each a share of its slivers (a
// barrier before it is used and one before it is packed again): Zen 4, runs with and without it
// alternated twice, 256^3 f32 158/157 -> 175/175 us, bf16 80/82 -> 87/123 us; 1024^3 and 2048^3
// within +-3%. A thread that waits at a barrier on this shared VM waits for the slower one.
// Reading A in place instead of packing it (small operands, pitch no multiple of 4 KiB) was tried
// at 256^3: packing's 6% was gone and the micro-kernel on six A rows as much slower (+-0.6%); at
// 1024^3 and 2048^3 (f32, bf16, Zen 4) the same: -0.7 to +1.4%. AMX differs: a tile load reads
// 16 rows at any stride, and at bf16 256^3 on the Intel Xeon packing took a third of the time
// (`perf record`: B 21%, A 12%, the tiles 37%). There A's slivers of 32 whole rows are read in
// place where one k block covers k (Kernel::ukr_a_in_place), and the threads then split C by
// columns, each packing half of B (column_ways). Two threads, bf16 NN, GFLOP/s, two rounds
// (throwaway environment switches): 256^3 packed 1270-1350, in place and rows 1530-1610, in place
// and columns 1750-1850; 384^3 in place rows 1870-1920, columns 1950-2130. Past one k block
// (kc 384 here) columns were slower (448^3 1280-1360 against 1650-1780, 512^3 1300-1360 against
// 1690-1730), and in place no faster than packed (1024^3, 2048^3: within +-4%) or slower (4096^3,
// a row pitch of 8 KiB: 1290-1390 against 1360-1560).
// AMX past one k block runs at 24-28% of its peak (bf16 2048^3, two threads: 1.9-2.2 TFLOP/s, and
// 6.06 in bench_peak's loop of tiles that load nothing). Throwaway switches, 2-3 rounds each, TFLOP/s:
// without repacking A and B each call (the panels touched once) 2.37-2.73 against 1.98-2.11 (B
// 10-17%, A 0-7%); C swapped for a 128 KiB buffer that stays in the L2, no change (2.37-2.49
// against 2.37-2.73 unpacked; 1.81-1.89 against 1.82-1.91 packed), so C's pass per k block is not
// what limits. Not kept, all no faster or slower: all of the thread's B packed once and C in mc x
// nc blocks that stay in the L2 through every k block (B then comes from the L3: 1.42-1.60 at
// 2048^3, 1.12-1.26 at 4096^3, against 1.84-1.89 and 1.69-1.82); two to four A slivers sharing
// each B sliver from the L1 at kc 128-384 (1.36-2.05 against 1.98-2.17); kc 512-2048 with nc cut
// to keep the B block's bytes (1.48-2.07 against 1.77-1.90); a column split (1024^3 1.58-1.66
// against 1.84-1.93). In a standalone loop of the tile kernel, neither the loads interleaved with
// the products nor a software prefetch of the next C tile or B chunk gained.
// At m's edge a sliver of fewer rows runs a kernel of that many rows straight into C (Kernel::
// ukr_rows, the FMA and vdpbf16ps kernels): 256^3 on two threads is then 21 and 21 2/3 slivers
// of work, not 21 and 22 (Zen 4, binaries alternated three times: f32 -1%, bf16 -1.8%). Other
// partial tiles (n's edge; the plain, AVX512-FP16 and AMX kernels) are computed in full on
// zero-padded slivers into a small buffer, and the valid part added to C. C is accumulated in
// place across k blocks when it is of the kernel's type with unit column stride; otherwise (a
// narrow or strided C, fp8 scales) in a workspace that is converted into C at the end (once: one
// rounding).
#include "flopscope/kernels/matmul.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "flopscope/cpu_info.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/tensor.hpp"
#include "amx.hpp"
#include "matmul_vendor.hpp"

// GCC 12 reports its own _mm512_undefined_*() placeholders inside the intrinsic headers as
// uninitialized (GCC bug 105593); nothing of ours is.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace flopscope::kernels {

namespace {

// Below this many multiply-adds (or elements written) one thread does the work: a parallel
// region costs more than it saves there.
constexpr double kParallelWork = 1 << 18;

bool is_fp8(ComputeMode mode) {
  const DType a = compute_mode_info(mode).a;
  return a == DType::f8e4m3 || a == DType::f8e5m2;
}

// C = alpha · A·B: the fp8 scales, 1 otherwise.
double alpha_of(const MatmulProblem& p) { return is_fp8(p.mode) ? double(p.scale_a) * double(p.scale_b) : 1.0; }

// f32 rounded to tf32 (10 mantissa bits), to nearest even.
double round_tf32(double x) {
  const auto bits = std::bit_cast<std::uint32_t>(float(x));
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;
  return double(std::bit_cast<float>((bits + 0xfffu + ((bits >> 13) & 1u)) & ~0x1fffu));
}

// Element (r, c) of a 2-D host view.
const unsigned char* element_at(const TensorRef& t, std::int64_t r, std::int64_t c) {
  return static_cast<const unsigned char*>(t.data) +
         (t.offset + r * t.strides[0] + c * t.strides[1]) * std::int64_t(t.element_size());
}

// The reference's loop for `rows` of C: sums and sums of |products| in f64, columns in blocks of
// kColumns whose B elements are read once (as f64) per block.
void reference_rows(const MatmulProblem& p, std::span<const std::int64_t> rows, double* sums, double* abs_sums,
                    bool round_tf32_inputs) {
  constexpr std::int64_t kColumns = 256;
  const std::int64_t n = p.n(), k = p.k();
  const bool tf32 = round_tf32_inputs && p.mode == ComputeMode::tf32;
  const double alpha = alpha_of(p);
  const auto value = [tf32](const TensorRef& t, std::int64_t r, std::int64_t c) {
    const double x = load_element(element_at(t, r, c), t.dtype);
    return tf32 ? round_tf32(x) : x;
  };
  std::vector<double> b_block;
  for (std::int64_t j0 = 0; j0 < n; j0 += kColumns) {
    const std::int64_t width = std::min(kColumns, n - j0);
    b_block.assign(std::size_t(k * width), 0.0);
#pragma omp parallel for schedule(static) if (double(k) * double(width) > kParallelWork)
    for (std::int64_t kk = 0; kk < k; ++kk)
      for (std::int64_t j = 0; j < width; ++j) b_block[std::size_t(kk * width + j)] = value(p.b, kk, j0 + j);
#pragma omp parallel for schedule(dynamic) if (double(rows.size()) * double(k) * double(width) > kParallelWork)
    for (std::size_t r = 0; r < rows.size(); ++r) {
      std::vector<double> sum(std::size_t(width), 0.0), abs_sum(std::size_t(width), 0.0);
      for (std::int64_t kk = 0; kk < k; ++kk) {
        const double a = value(p.a, rows[r], kk);
        const double* b_row = &b_block[std::size_t(kk * width)];
        for (std::int64_t j = 0; j < width; ++j) {
          sum[std::size_t(j)] += a * b_row[j];
          abs_sum[std::size_t(j)] += std::fabs(a * b_row[j]);
        }
      }
      for (std::int64_t j = 0; j < width; ++j) {
        sums[std::int64_t(r) * n + j0 + j] = alpha * sum[std::size_t(j)];
        abs_sums[std::int64_t(r) * n + j0 + j] = std::fabs(alpha) * abs_sum[std::size_t(j)];
      }
    }
  }
}

}  // namespace

// ---- the problem, the reference and the bound -------------------------------------------------

// matmul_problem_error is in kernels/matmul.cpp, shared with the CUDA table.

void matmul_reference(const MatmulProblem& p) {
  if (auto error = matmul_problem_error(p)) throw std::invalid_argument("matmul_reference: " + *error);
  const std::int64_t m = p.m(), n = p.n();
  std::vector<std::int64_t> rows(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) rows[std::size_t(i)] = i;
  std::vector<double> sums(std::size_t(m * n)), abs_sums(std::size_t(m * n));
  reference_rows(p, rows, sums.data(), abs_sums.data(), true);
  auto* c = static_cast<unsigned char*>(p.c.data);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      store_element(c + (p.c.offset + i * p.c.strides[0] + j * p.c.strides[1]) * std::int64_t(p.c.element_size()),
                    p.c.dtype, sums[std::size_t(i * n + j)]);
}

void matmul_reference_rows(const MatmulProblem& p, std::span<const std::int64_t> rows, double* sums,
                           double* abs_sums) {
  if (auto error = matmul_problem_error(p)) throw std::invalid_argument("matmul_reference_rows: " + *error);
  for (std::int64_t i : rows)
    if (i < 0 || i >= p.m()) throw std::out_of_range("matmul_reference_rows: row " + std::to_string(i) + " of " + p.c.str());
  reference_rows(p, rows, sums, abs_sums, false);
}

Tolerance matmul_tolerance(const MatmulProblem& p, const MatmulInfo& variant) {
  const ComputeModeInfo& mode = compute_mode_info(p.mode);
  const std::int64_t k = p.k();
  Tolerance bound;
  if (variant.narrow_accumulation > 0) {
    // Blocks of `block` products summed in the narrow dtype (each step rounds the partial sum),
    // then ceil(k / block) additions in f32.
    const std::int64_t block = variant.narrow_accumulation;
    bound = accumulation_tolerance(mode.a, mode.a, p.c.dtype, std::min(k, block));
    bound.rtol += double((k + block - 1) / block) * unit_roundoff(DType::f32);
  } else {
    bound = accumulation_tolerance(mode.a, mode.accumulate, p.c.dtype, k);
  }
  if (p.mode == ComputeMode::tf32) bound.rtol += 2 * std::ldexp(1.0, -10);
  return bound;
}

namespace {

constexpr int kMaxRows = 14;  // at least the tallest sliver that pack_a packs (mr: 8 at most today)

// ---- operands and packing ---------------------------------------------------------------------

// A 2-D operand as the packing reads it: element (r, c) at base + (r·rs + c·cs)·size bytes.
struct View {
  const unsigned char* base;
  std::int64_t rows, cols, rs, cs, size;

  explicit View(const TensorRef& t)
      : base(static_cast<const unsigned char*>(t.element_data())),
        rows(t.sizes[0]),
        cols(t.sizes[1]),
        rs(t.strides[0]),
        cs(t.strides[1]),
        size(std::int64_t(t.element_size())) {}
  const unsigned char* at(std::int64_t r, std::int64_t c) const { return base + (r * rs + c * cs) * size; }
};

// Element decoders: what a packed panel holds for one stored element.
template <class T>
T load_raw(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

std::array<float, 256> fp8_table(DType dtype) {
  std::array<float, 256> table{};
  for (std::uint32_t bits = 0; bits < 256; ++bits) table[bits] = decode_f32(dtype, bits);
  return table;
}
const std::array<float, 256> kE4M3 = fp8_table(DType::f8e4m3), kE5M2 = fp8_table(DType::f8e5m2);

// `bytes`: the stored element's size (a compile-time step for contiguous rows, which then vectorize).
struct FromF32 {
  static constexpr std::int64_t bytes = 4;
  static float get(const unsigned char* p) { return load_raw<float>(p); }
};
struct FromF64 {
  static constexpr std::int64_t bytes = 8;
  static double get(const unsigned char* p) { return load_raw<double>(p); }
};
struct FromBf16 {
  static constexpr std::int64_t bytes = 2;
  static float get(const unsigned char* p) { return std::bit_cast<float>(std::uint32_t(load_raw<std::uint16_t>(p)) << 16); }
};
struct FromF16 {
  static constexpr std::int64_t bytes = 2;
  static float get(const unsigned char* p) { return fast::decode_f32<fast::F16>(load_raw<std::uint16_t>(p)); }
};
struct FromE4M3 {
  static constexpr std::int64_t bytes = 1;
  static float get(const unsigned char* p) { return kE4M3[*p]; }
};
struct FromE5M2 {
  static constexpr std::int64_t bytes = 1;
  static float get(const unsigned char* p) { return kE5M2[*p]; }
};
struct Bits16 {
  static constexpr std::int64_t bytes = 2;
  static std::uint16_t get(const unsigned char* p) { return load_raw<std::uint16_t>(p); }
};

// One A sliver: rows i0 .. i0+mr of k columns p0 .. p0+kc, stored [kk][r] (zero past m). The
// sliver is written in order, reading the mr rows side by side (each row is read along k).
template <class From, class P>
void pack_a(const View& a, std::int64_t i0, int mr, std::int64_t p0, std::int64_t kc, P* dst) {
  const int rows = int(std::min<std::int64_t>(mr, a.rows - i0));
  const unsigned char* row[kMaxRows];
  for (int r = 0; r < rows; ++r) row[r] = a.at(i0 + r, p0);
  const std::int64_t step = a.cs * a.size;
  for (std::int64_t kk = 0; kk < kc; ++kk, dst += mr) {
    for (int r = 0; r < rows; ++r) dst[r] = From::get(row[r] + kk * step);
    for (int r = rows; r < mr; ++r) dst[r] = P{};
  }
}

// One B sliver: columns j0 .. j0+nr of rows p0 .. p0+kc, stored [kk][c] (zero past n).
template <class From, class P>
void pack_b(const View& b, std::int64_t p0, std::int64_t kc, std::int64_t j0, int nr, P* dst) {
  const int cols = int(std::min<std::int64_t>(nr, b.cols - j0));
  for (std::int64_t kk = 0; kk < kc; ++kk) {
    const unsigned char* src = b.at(p0 + kk, j0);
    P* out = dst + kk * nr;
    if (b.cs == 1) {  // contiguous rows: a compile-time step
      for (int c = 0; c < cols; ++c) out[c] = From::get(src + c * From::bytes);
    } else {
      for (int c = 0; c < cols; ++c) out[c] = From::get(src + c * b.cs * From::bytes);
    }
    for (int c = cols; c < nr; ++c) out[c] = P{};
  }
}

// B's columns j0 .. j0+cols of rows p0 .. p0+kc as the slivers pack_b writes (sliver s at
// dst + s·pitch: sliver_pitch; columns past `cols` zero), for B of unit column stride and one k per step: each
// row is read once along its length and its runs of nr go to their slivers. (Sliver by sliver,
// each row of B would be touched once per sliver for nr elements, a page apart: reads that the
// prefetchers do not follow; packing B cost 6% of a 1024^3 f32 matmul so.)
template <class From, class P>
void pack_b_rows(const View& b, std::int64_t p0, std::int64_t kc, std::int64_t j0, std::int64_t cols, int nr,
                 std::int64_t pitch, P* dst) {
  const std::int64_t slivers = (cols + nr - 1) / nr;
  for (std::int64_t kk = 0; kk < kc; ++kk) {
    const unsigned char* src = b.at(p0 + kk, j0);
    for (std::int64_t s = 0; s < slivers; ++s, src += nr * From::bytes) {
      P* out = dst + s * pitch + kk * nr;
      const int count = int(std::min<std::int64_t>(nr, cols - s * nr));
      for (int c = 0; c < count; ++c) out[c] = From::get(src + c * From::bytes);
      for (int c = count; c < nr; ++c) out[c] = P{};
    }
  }
}

// pack_b_rows where packing is a copy (P is the stored type: f32, f64, 16-bit bits), on AVX-512:
// each run of nr elements as whole 64-byte vectors (the last masked), a row's tail zeroed, the row
// kAhead rows on requested as this one is copied (the page changes from row to row, and the
// hardware's prefetchers stop at pages: packing B took 18% less time so at 1024^3).
template <class P>
__attribute__((target("avx512f,avx512bw"))) void pack_b_rows_avx512(const View& b, std::int64_t p0, std::int64_t kc,
                                                                     std::int64_t j0, std::int64_t cols, int nr,
                                                                     std::int64_t pitch, P* dst) {
  const std::int64_t slivers = (cols + nr - 1) / nr, run = nr * std::int64_t(sizeof(P));
  const std::int64_t bytes = cols * std::int64_t(sizeof(P));
  constexpr std::int64_t kAhead = 4;
  for (std::int64_t kk = 0; kk < kc; ++kk) {
    const auto* src = b.at(p0 + kk, j0);
    if (kk + kAhead < kc) {
      const auto* next = b.at(p0 + kk + kAhead, j0);
      for (std::int64_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(next + o), _MM_HINT_T0);
    }
    for (std::int64_t s = 0; s < slivers; ++s) {
      auto* out = reinterpret_cast<unsigned char*>(dst + s * pitch + kk * nr);
      for (std::int64_t o = 0; o < run; o += 64) {
        const std::int64_t left = bytes - s * run - o;
        if (left >= 64) {
          _mm512_storeu_si512(out + o, _mm512_loadu_si512(src + s * run + o));
        } else {
          const __mmask64 valid = left > 0 ? (1ull << left) - 1 : 0;
          _mm512_storeu_si512(out + o, _mm512_maskz_loadu_epi8(valid, src + s * run + o));
        }
      }
    }
  }
}

// Six rows into runs of six (the 6 x 64 kernels' A slivers): 16 elements of each row are 96 of the
// output, six whole vectors, each gathered from the rows by three two-source permutes and two
// blends, where the 16 x 16 transpose below took 64 shuffles and 16 masked stores of 6 lanes. Zen 4,
// 256^3 (one k block: packing is most of what is not the micro-kernel), the two alternated by
// process, 3 runs of 3000-4000 calls beside oneDNN in each: own / oneDNN f32 0.869/0.889/0.888x ->
// 0.909/0.904/0.907x, bf16 0.897/0.884/0.899x -> 0.894/0.916/0.912x; A packing's share of a bf16
// 256^3 call's samples (perf) 3.9% -> 1.75%. Returns how many elements of each row it wrote.
__attribute__((target("avx512f"))) std::int64_t transpose_six_rows_avx512(const void* const* row, int rows,
                                                                           std::int64_t count, float* dst) {
  struct Tables {
    std::array<std::array<std::int32_t, 16>, 6> index{};  // per output vector: kk + 16 (odd row of a pair)
    std::array<std::array<std::uint16_t, 3>, 6> pair{};   // per output vector, per row pair: its lanes
  };
  static constexpr Tables kTables = [] {
    Tables t{};
    for (int o = 0; o < 6; ++o)
      for (int lane = 0; lane < 16; ++lane) {
        const int g = 16 * o + lane, kk = g / 6, r = g % 6;
        t.index[o][lane] = kk + 16 * (r % 2);
        t.pair[o][r / 2] = std::uint16_t(t.pair[o][r / 2] | 1u << lane);
      }
    return t;
  }();
  std::int64_t kk = 0;
  for (; kk + 16 <= count; kk += 16) {
    __m512 v[6];
    for (int r = 0; r < 6; ++r) v[r] = r < rows ? _mm512_loadu_ps(static_cast<const float*>(row[r]) + kk) : _mm512_setzero_ps();
    for (int o = 0; o < 6; ++o) {
      const __m512i index = _mm512_loadu_si512(kTables.index[o].data());
      __m512 out = _mm512_permutex2var_ps(v[0], index, v[1]);
      out = _mm512_mask_blend_ps(kTables.pair[o][1], out, _mm512_permutex2var_ps(v[2], index, v[3]));
      out = _mm512_mask_blend_ps(kTables.pair[o][2], out, _mm512_permutex2var_ps(v[4], index, v[5]));
      _mm512_storeu_ps(dst + kk * 6 + 16 * o, out);
    }
  }
  return kk;
}

// 32-bit elements of up to 16 rows, each read along its length (count elements from row[r]),
// written transposed: element kk of row r to dst[kk·ld + r], `lanes` (the low bits) of each
// destination run of 16, zero for rows past `rows`. 16 elements of every row loaded as vectors and
// transposed in registers (16 x 16; six rows into runs of six by transpose_six_rows_avx512); the
// elements left over one by one. f32 A slivers use it, and bf16 pairs read along k (a pair is 32
// bits).
__attribute__((target("avx512f"))) void transpose_rows_avx512(const void* const* row, int rows, std::int64_t count,
                                                              void* out, std::int64_t ld, __mmask16 lanes) {
  float* dst = static_cast<float*>(out);
  std::int64_t kk = 0;
  if (ld == 6 && lanes == 0x3f) kk = transpose_six_rows_avx512(row, rows, count, dst);
  for (; kk + 16 <= count; kk += 16) {
    __m512 v[16], t[16];
    for (int r = 0; r < 16; ++r)
      v[r] = r < rows ? _mm512_loadu_ps(reinterpret_cast<const float*>(row[r]) + kk) : _mm512_setzero_ps();
    for (int r = 0; r < 16; r += 2) {  // pairs of rows interleaved
      t[r] = _mm512_unpacklo_ps(v[r], v[r + 1]);
      t[r + 1] = _mm512_unpackhi_ps(v[r], v[r + 1]);
    }
    for (int r = 0; r < 16; r += 4) {  // quads: elements 4q+j of rows r..r+3 in one 128-bit lane
      v[r] = _mm512_shuffle_ps(t[r], t[r + 2], 0x44);
      v[r + 1] = _mm512_shuffle_ps(t[r], t[r + 2], 0xee);
      v[r + 2] = _mm512_shuffle_ps(t[r + 1], t[r + 3], 0x44);
      v[r + 3] = _mm512_shuffle_ps(t[r + 1], t[r + 3], 0xee);
    }
    for (int q = 0; q < 4; ++q) {  // 128-bit lanes across row quads 0,1 and 2,3
      t[q] = _mm512_shuffle_f32x4(v[q], v[4 + q], 0x88);
      t[4 + q] = _mm512_shuffle_f32x4(v[q], v[4 + q], 0xdd);
      t[8 + q] = _mm512_shuffle_f32x4(v[8 + q], v[12 + q], 0x88);
      t[12 + q] = _mm512_shuffle_f32x4(v[8 + q], v[12 + q], 0xdd);
    }
    for (int q = 0; q < 8; ++q) {  // column c = 4·lane + j lands in vector c: rows 0-15 in order
      v[q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0x88);
      v[8 + q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0xdd);
    }
    for (int c = 0; c < 16; ++c) _mm512_mask_storeu_ps(dst + (kk + c) * ld, lanes, v[c]);
  }
  for (; kk < count; ++kk)
    for (int r = 0; r < 16; ++r)
      if (lanes >> r & 1) {
        float value = 0.0f;
        if (r < rows) std::memcpy(&value, static_cast<const unsigned char*>(row[r]) + 4 * kk, 4);
        dst[kk * ld + r] = value;
      }
}

// pack_a for f32 rows of unit column stride on AVX-512 (transpose_rows_avx512); other layouts and
// short k blocks as pack_a.
__attribute__((target("avx512f"))) void pack_a_f32_avx512(const View& a, std::int64_t i0, int mr, std::int64_t p0,
                                                          std::int64_t kc, float* dst) {
  const int rows = int(std::min<std::int64_t>(mr, a.rows - i0));
  if (a.cs != 1 || mr > 16 || kc < 16) return pack_a<FromF32, float>(a, i0, mr, p0, kc, dst);
  const void* row[16];
  for (int r = 0; r < rows; ++r) row[r] = a.at(i0 + r, p0);
  transpose_rows_avx512(row, rows, kc, dst, mr, __mmask16((1u << mr) - 1));
}

// A B sliver from columns of unit row stride (each runs along memory from row p0): `count` 32-bit
// elements down each of the nr columns from j0 (an f32, or a bf16 pair), written as nr lanes a
// step, 16 columns at a time by transpose_rows_avx512; zero past B's last column. nr: a multiple
// of 16.
__attribute__((target("avx512f"))) void transpose_columns_avx512(const View& b, std::int64_t p0, std::int64_t j0,
                                                                 int nr, std::int64_t count, void* dst) {
  const int cols = int(std::min<std::int64_t>(nr, b.cols - j0));
  for (int c0 = 0; c0 < nr; c0 += 16) {
    const void* column[16];
    const int n = std::clamp(cols - c0, 0, 16);
    for (int c = 0; c < n; ++c) column[c] = b.at(p0, j0 + c0 + c);
    transpose_rows_avx512(column, n, count, static_cast<std::uint32_t*>(dst) + c0, nr, __mmask16(0xffff));
  }
}

// pack_b for f32 columns of unit row stride (NT's B: each column runs along memory) on AVX-512:
// a sliver is a transpose of its columns, 16 at a time (transpose_rows_avx512); other layouts and
// short k blocks as pack_b. (Element by element it took 24% of NT's time at 1024^3: 0.78x oneDNN.)
__attribute__((target("avx512f"))) void pack_b_f32_avx512(const View& b, std::int64_t p0, std::int64_t kc,
                                                          std::int64_t j0, int nr, float* dst) {
  if (b.rs != 1 || nr % 16 != 0 || kc < 16) return pack_b<FromF32, float>(b, p0, kc, j0, nr, dst);
  transpose_columns_avx512(b, p0, j0, nr, kc, dst);
}

// bf16 pairs for vdpbf16ps: step s of a sliver holds k = 2s (low half) and 2s+1 (high half).
std::uint32_t bf16_pair(const View& t, std::int64_t r, std::int64_t c, std::int64_t c_end, bool along_cols) {
  const auto at = [&](std::int64_t cc) -> std::uint32_t {
    if (cc >= c_end) return 0;
    return load_raw<std::uint16_t>(along_cols ? t.at(r, cc) : t.at(cc, r));
  };
  return at(c) | at(c + 1) << 16;
}

// Two runs of bf16 (k and k + 1, each along the sliver's rows or columns) interleaved into pairs:
// lane i of the result is first[i] | second[i] << 16, for the `count` (<= 32) lanes from `first`
// and `second` (zero past count). Out: lanes 0-15 in lo, 16-31 in hi.
__attribute__((target("avx512f,avx512bw"))) void interleave_pairs(const unsigned char* first,
                                                                   const unsigned char* second, int count,
                                                                   __m512i& lo, __m512i& hi) {
  // Word 2i of lo takes first's word i, word 2i + 1 second's (index 32 + i); hi the same from 16.
  static constexpr auto kIndex = [] {
    std::array<std::uint16_t, 32> index{};
    for (int i = 0; i < 16; ++i) index[2 * i] = std::uint16_t(i), index[2 * i + 1] = std::uint16_t(32 + i);
    return index;
  }();
  const __m512i kLo = _mm512_loadu_si512(kIndex.data());
  const __m512i kHi = _mm512_add_epi16(kLo, _mm512_set1_epi16(16));
  const __mmask32 mask = count >= 32 ? ~__mmask32{0} : __mmask32((1u << count) - 1);
  const __m512i a = _mm512_maskz_loadu_epi16(mask, first);
  const __m512i b = _mm512_maskz_loadu_epi16(mask, second);
  lo = _mm512_permutex2var_epi16(a, kLo, b);
  hi = _mm512_permutex2var_epi16(a, kHi, b);
}

// pack_a / pack_b for bf16 pairs: a pair is 32 bits, so where k runs along memory (A's rows of
// unit column stride, B's columns of unit row stride: NT) a sliver is a 32-bit transpose
// (transpose_rows_avx512); where k runs across it (NN's B, TN's A) each step interleaves two
// runs (interleave_pairs). A k block of odd length (only the last, when k is odd) ends with a step
// whose high halves are zero, written by bf16_pair; other layouts are packed element by element.
__attribute__((target("avx512f,avx512bw"))) void pack_a_pairs(const View& a, std::int64_t i0, int mr,
                                                               std::int64_t p0, std::int64_t kc,
                                                               std::uint32_t* dst) {
  const int rows = int(std::min<std::int64_t>(mr, a.rows - i0));
  const std::int64_t steps = (kc + 1) / 2, whole = kc / 2;
  const __mmask16 lanes = __mmask16((1u << mr) - 1);
  std::int64_t s = 0;
  if (mr <= 16 && a.cs == 1) {
    const void* row[16];
    for (int r = 0; r < rows; ++r) row[r] = a.at(i0 + r, p0);
    transpose_rows_avx512(row, rows, whole, dst, mr, lanes);
    s = whole;
  } else if (mr <= 16 && a.rs == 1) {
    for (; s < whole; ++s) {
      __m512i lo, hi;
      interleave_pairs(a.at(i0, p0 + 2 * s), a.at(i0, p0 + 2 * s + 1), rows, lo, hi);
      _mm512_mask_storeu_epi32(dst + s * mr, lanes, lo);
    }
  }
  for (; s < steps; ++s)
    for (int r = 0; r < mr; ++r) dst[s * mr + r] = r < rows ? bf16_pair(a, i0 + r, p0 + 2 * s, p0 + kc, true) : 0;
}

// B of unit column stride (NN's) never comes here: gemm_block packs it a row pair at a time
// (pack_b_pairs_rows, below).
__attribute__((target("avx512f,avx512bw"))) void pack_b_pairs(const View& b, std::int64_t p0, std::int64_t kc,
                                                               std::int64_t j0, int nr, std::uint32_t* dst) {
  const int cols = int(std::min<std::int64_t>(nr, b.cols - j0));
  const std::int64_t steps = (kc + 1) / 2, whole = kc / 2;
  std::int64_t s = 0;
  if (nr % 16 == 0 && b.rs == 1) {
    transpose_columns_avx512(b, p0, j0, nr, whole, dst);
    s = whole;
  }
  for (; s < steps; ++s)
    for (int c = 0; c < nr; ++c) dst[s * nr + c] = c < cols ? bf16_pair(b, j0 + c, p0 + 2 * s, p0 + kc, false) : 0;
}

// pack_b_rows for bf16 pairs (NN's B, k across memory): rows 2s and 2s + 1 of the block read along
// their length together and interleaved 32 columns at a time into step s of every sliver, the rows
// kAhead steps on requested meanwhile (as pack_b_rows_avx512); an odd last row pairs with zeros.
// Sliver by sliver (pack_b_pairs), each row was read 128 bytes at a time, a row pitch apart: the
// packing took 4.8% of a 2048^3 bf16 matmul's samples (perf, Zen 4), 2.7% so; the matmul +1-4% at
// 1024^3 and 2048^3, the two packings alternated in one process (5 runs of 30-40).
__attribute__((target("avx512f,avx512bw"))) void pack_b_pairs_rows(const View& b, std::int64_t p0, std::int64_t kc,
                                                                    std::int64_t j0, std::int64_t cols, int nr,
                                                                    std::int64_t pitch, std::uint32_t* dst) {
  const std::int64_t slivers = (cols + nr - 1) / nr, steps = (kc + 1) / 2, bytes = cols * 2;
  constexpr std::int64_t kAhead = 2;
  for (std::int64_t s = 0; s < steps; ++s) {
    const bool pair = 2 * s + 1 < kc;
    const auto* first = b.at(p0 + 2 * s, j0);
    const auto* second = pair ? b.at(p0 + 2 * s + 1, j0) : first;
    for (std::int64_t ahead = 2 * (s + kAhead); ahead < std::min(kc, 2 * (s + kAhead) + 2); ++ahead) {
      const auto* next = b.at(p0 + ahead, j0);
      for (std::int64_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(next + o), _MM_HINT_T0);
    }
    for (std::int64_t sl = 0; sl < slivers; ++sl) {
      std::uint32_t* out = dst + sl * pitch + s * nr;
      for (int c0 = 0; c0 < nr; c0 += 32) {
        const std::int64_t col = sl * nr + c0;
        const int count = int(std::clamp<std::int64_t>(cols - col, 0, 32));
        __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
        if (count > 0) interleave_pairs(first + 2 * col, second + 2 * col, count, lo, hi);
        if (!pair) {
          lo = _mm512_and_si512(lo, _mm512_set1_epi32(0xffff));
          hi = _mm512_and_si512(hi, _mm512_set1_epi32(0xffff));
        }
        _mm512_storeu_si512(out + c0, lo);
        _mm512_storeu_si512(out + c0 + 16, hi);
      }
    }
  }
}

// AMX operands (Note [AMX tiles]): a chunk is 32 k of one A row, or 16 k pairs of 32 B columns
// (one tile row each of 64 bytes).
struct alignas(64) Bf16Chunk {
  std::uint32_t pairs[16];
};

// One A sliver for AMX: rows i0 .. i0+mr, chunk q holding row r's k = p0+32q .. p0+32q+31 (zero
// past m and past kc): each chunk row is a tile row, bf16 in k order (pairs low half first).
void pack_a_amx(const View& a, std::int64_t i0, int mr, std::int64_t p0, std::int64_t kc, Bf16Chunk* dst) {
  const int rows = int(std::min<std::int64_t>(mr, a.rows - i0));
  const std::int64_t chunks = (kc + 31) / 32;
  for (std::int64_t q = 0; q < chunks; ++q) {
    const std::int64_t k0 = p0 + 32 * q, width = std::min<std::int64_t>(32, p0 + kc - k0);
    for (int r = 0; r < mr; ++r) {
      auto* out = reinterpret_cast<std::uint16_t*>(&dst[q * mr + r]);
      if (r >= rows) {
        std::memset(out, 0, 64);
        continue;
      }
      const unsigned char* src = a.at(i0 + r, k0);
      if (a.cs == 1) {
        std::memcpy(out, src, std::size_t(width) * 2);
      } else {
        for (std::int64_t c = 0; c < width; ++c) out[c] = load_raw<std::uint16_t>(src + c * a.cs * 2);
      }
      for (std::int64_t c = width; c < 32; ++c) out[c] = 0;
    }
  }
}

// Two rows of B's 32 columns (row0: k, row1: k + 1) into 32 pairs, the VNNI layout: two
// two-source word permutes. (Every CPU with AMX has AVX-512BW.)
__attribute__((target("avx512f,avx512bw"))) void pair_rows_avx512(const void* row0, const void* row1,
                                                                   std::uint32_t* out) {
  static constexpr auto kIndex = [] {
    std::array<std::array<std::uint16_t, 32>, 2> index{};
    for (int half = 0; half < 2; ++half)
      for (int c = 0; c < 16; ++c) {
        index[half][2 * c] = std::uint16_t(16 * half + c);           // row0's column
        index[half][2 * c + 1] = std::uint16_t(32 + 16 * half + c);  // row1's column
      }
    return index;
  }();
  const __m512i a = _mm512_loadu_si512(row0), b = _mm512_loadu_si512(row1);
  _mm512_storeu_si512(out, _mm512_permutex2var_epi16(a, _mm512_loadu_si512(kIndex[0].data()), b));
  _mm512_storeu_si512(out + 16, _mm512_permutex2var_epi16(a, _mm512_loadu_si512(kIndex[1].data()), b));
}

// One B sliver for AMX: columns j0 .. j0+nr (nr = 32), chunk q holding the VNNI layout of k =
// p0+32q .. +31: row s of the chunk is k pair (2s, 2s+1) of the 32 columns side by side.
void pack_b_amx(const View& b, std::int64_t p0, std::int64_t kc, std::int64_t j0, int nr, Bf16Chunk* dst) {
  const int cols = int(std::min<std::int64_t>(nr, b.cols - j0));
  const std::int64_t chunks = (kc + 31) / 32;
  for (std::int64_t q = 0; q < chunks; ++q) {
    auto* out = reinterpret_cast<std::uint32_t*>(dst + q * nr);
    if (b.rs == 1 && b.cs != 1 && cols == nr && 32 * q + 32 <= kc) {
      // B a transposed view (k contiguous, NT): a column's 32 k are 16 pairs in one line; the
      // chunk is that 32 x 16 block of pairs transposed, a column at a time.
      for (int c = 0; c < 32; ++c) {
        const unsigned char* column = b.at(p0 + 32 * q, j0 + c);
        for (int s = 0; s < 16; ++s) out[s * nr + c] = load_raw<std::uint32_t>(column + 4 * s);
      }
      continue;
    }
    for (int s = 0; s < 16; ++s, out += nr) {
      const std::int64_t k0 = p0 + 32 * q + 2 * s;
      const bool has0 = k0 < p0 + kc, has1 = k0 + 1 < p0 + kc;
      if (b.cs == 1 && cols == nr && has1) {  // contiguous rows
        pair_rows_avx512(b.at(k0, j0), b.at(k0 + 1, j0), out);
        continue;
      }
      for (int c = 0; c < nr; ++c) {
        const std::uint32_t low = c < cols && has0 ? load_raw<std::uint16_t>(b.at(k0, j0 + c)) : 0;
        const std::uint32_t high = c < cols && has1 ? load_raw<std::uint16_t>(b.at(k0 + 1, j0 + c)) : 0;
        out[c] = low | high << 16;
      }
    }
  }
}

// A whole AMX B block of unit column stride (NN) at once (Kernel::pack_b_rows): a k pair at a time
// across every sliver, so that B's two rows are read from end to end (pack_b_amx reads 64 bytes of
// each row a sliver). Sliver sb at dst + sb·pitch. A last chunk of fewer than 32 k, and a last
// sliver of fewer than nr columns, go through pack_b_amx (zeros past kc and past n). Intel Xeon,
// bf16 2048^3, two threads, `perf record`: B's packing 8.6% of the samples beside the tiles' 61.1%,
// 6.5% beside 63.7% so. Requesting the rows 2 or 4 pairs ahead (as pack_b_pairs_rows does) made no
// difference that the host's noise let through.
__attribute__((target("avx512f,avx512bw"))) void pack_b_amx_rows(const View& b, std::int64_t p0, std::int64_t kc,
                                                                  std::int64_t j0, std::int64_t cols, int nr,
                                                                  std::int64_t pitch, Bf16Chunk* dst) {
  const std::int64_t whole = cols / nr, full_chunks = kc / 32;
  for (std::int64_t q = 0; q < full_chunks; ++q)
    for (int s = 0; s < 16; ++s) {
      const std::int64_t k0 = p0 + 32 * q + 2 * s;
      for (std::int64_t sb = 0; sb < whole; ++sb)
        pair_rows_avx512(b.at(k0, j0 + sb * nr), b.at(k0 + 1, j0 + sb * nr),
                         reinterpret_cast<std::uint32_t*>(dst + sb * pitch + q * nr) + s * nr);
    }
  if (full_chunks * 32 < kc)  // chunk full_chunks of every whole sliver
    for (std::int64_t sb = 0; sb < whole; ++sb)
      pack_b_amx(b, p0 + 32 * full_chunks, kc - 32 * full_chunks, j0 + sb * nr, nr,
                 dst + sb * pitch + full_chunks * nr);
  if (whole * nr < cols) pack_b_amx(b, p0, kc, j0 + whole * nr, nr, dst + whole * pitch);
}

// ---- micro-kernels ------------------------------------------------------------------------------
// Each computes one mr x nr tile of C from an A sliver and a B sliver of `steps` packed k steps:
// c[r·ldc + j] (+)= Σ a[s·mr + r]·b[s·nr + j] (accumulate: add to what C holds).

template <class T, int MR, int NR>
void ukr_plain(std::int64_t steps, const T* a, const T* b, T* c, std::int64_t ldc, bool accumulate) {
  T acc[MR][NR] = {};
  for (std::int64_t s = 0; s < steps; ++s, a += MR, b += NR)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) acc[r][j] += a[r] * b[j];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) c[r * ldc + j] = (accumulate ? c[r * ldc + j] : T{}) + acc[r][j];
}

// Note [prefetching C]: a tile of C is loaded once per k block, after the k loop; its lines are
// requested first so that they arrive while the FMAs run.
template <class T>
inline void prefetch_tile(const T* c, std::int64_t ldc, int rows, int bytes_per_row) {
  for (int r = 0; r < rows; ++r)
    for (int offset = 0; offset < bytes_per_row; offset += 64)
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc) + offset, _MM_HINT_T0);
}

// The FMA micro-kernel (matmul_fma.inc), compiled for AVX-512 (namespace zmm) and AVX2 (ymm):
// one template, each ISA's vector types and operations around it.
#pragma GCC push_options
#pragma GCC target("avx512f")
namespace zmm {
template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = __m512;
  static constexpr int lanes = 16;
};
template <>
struct Vec<double> {
  using type = __m512d;
  static constexpr int lanes = 8;
};
inline __m512 zero(float) { return _mm512_setzero_ps(); }
inline __m512d zero(double) { return _mm512_setzero_pd(); }
inline __m512 load(const float* p) { return _mm512_load_ps(p); }
inline __m512d load(const double* p) { return _mm512_load_pd(p); }
inline __m512 loadu(const float* p) { return _mm512_loadu_ps(p); }
inline __m512d loadu(const double* p) { return _mm512_loadu_pd(p); }
inline void storeu(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
inline void storeu(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
inline __m512 broadcast(const float* p) { return _mm512_set1_ps(*p); }
inline __m512d broadcast(const double* p) { return _mm512_set1_pd(*p); }
inline __m512 fmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
inline __m512d fmadd(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }
inline __m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
inline __m512d add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
#include "matmul_fma.inc"
}  // namespace zmm
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace ymm {
template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = __m256;
  static constexpr int lanes = 8;
};
template <>
struct Vec<double> {
  using type = __m256d;
  static constexpr int lanes = 4;
};
inline __m256 zero(float) { return _mm256_setzero_ps(); }
inline __m256d zero(double) { return _mm256_setzero_pd(); }
inline __m256 load(const float* p) { return _mm256_load_ps(p); }
inline __m256d load(const double* p) { return _mm256_load_pd(p); }
inline __m256 loadu(const float* p) { return _mm256_loadu_ps(p); }
inline __m256d loadu(const double* p) { return _mm256_loadu_pd(p); }
inline void storeu(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
inline void storeu(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
inline __m256 broadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline __m256d broadcast(const double* p) { return _mm256_broadcast_sd(p); }
inline __m256 fmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
inline __m256d fmadd(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }
inline __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
inline __m256d add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
#include "matmul_fma.inc"
}  // namespace ymm
#pragma GCC pop_options

// bf16 pairs: a step is two k; vdpbf16ps adds both products of a pair to an f32 lane.
template <int MR, int NV, int A_PITCH = MR>
__attribute__((target("avx512f,avx512bf16"))) void ukr_dpbf16(std::int64_t steps, const std::uint32_t* a,
                                                              const std::uint32_t* b, float* c, std::int64_t ldc,
                                                              bool accumulate) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  prefetch_tile(c, ldc, MR, NV * 64);
  for (std::int64_t s = 0; s < steps; ++s, a += A_PITCH, b += 16 * NV) {
    __m512bh bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = (__m512bh)_mm512_load_si512(b + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(int(a[r]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }
  zmm::store_tile<float, MR, NV>(acc, c, ldc, accumulate);
}

// Note [AMX tiles] (amx.hpp): C's 32 x 32 tile is four f32 tiles (0-3), each k chunk two A tiles
// (4, 5: rows 0-15, 16-31, 32 bf16 a row) and two B tiles (6, 7: columns 0-15, 16-31, 16 k pairs a
// row), in amx.hpp's configuration (amx_begin, amx_end).

// The tiles of one C tile: chunk q's A tiles at a + q·a_chunk_bytes (rows 0-15) and 16 rows of
// a_row_bytes further (rows 16-31), its B tiles at b + 32q chunks.
__attribute__((target("amx-tile,amx-bf16"), always_inline)) inline void amx_tile(
    std::int64_t chunks, const unsigned char* a, std::int64_t a_row_bytes, std::int64_t a_chunk_bytes,
    const Bf16Chunk* b, float* c, std::int64_t ldc, bool accumulate) {
  const std::int64_t stride = ldc * std::int64_t(sizeof(float));
  float* c1 = c + 16 * ldc;
  if (accumulate) {
    _tile_loadd(0, c, stride);
    _tile_loadd(1, c + 16, stride);
    _tile_loadd(2, c1, stride);
    _tile_loadd(3, c1 + 16, stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const std::int64_t a1 = 16 * a_row_bytes;
  for (std::int64_t q = 0; q < chunks; ++q, a += a_chunk_bytes, b += 32) {
    _tile_loadd(4, a, a_row_bytes);
    _tile_loadd(6, b, 128);
    _tile_loadd(5, a + a1, a_row_bytes);
    _tile_loadd(7, reinterpret_cast<const char*>(b) + 64, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, stride);
  _tile_stored(1, c + 16, stride);
  _tile_stored(2, c1, stride);
  _tile_stored(3, c1 + 16, stride);
}

// A packed (pack_a_amx): a chunk row is 64 bytes, a chunk 32 of them.
__attribute__((target("amx-tile,amx-bf16"))) void ukr_amx(std::int64_t chunks, const Bf16Chunk* a,
                                                          const Bf16Chunk* b, float* c, std::int64_t ldc,
                                                          bool accumulate) {
  amx_tile(chunks, reinterpret_cast<const unsigned char*>(a), 64, 32 * 64, b, c, ldc, accumulate);
}

// A where it lies (Kernel::ukr_a_in_place): a tile row is 64 bytes of an A row, a chunk 64 bytes on.
__attribute__((target("amx-tile,amx-bf16"))) void ukr_amx_a_in_place(std::int64_t chunks, const unsigned char* a,
                                                                     std::int64_t a_row_bytes, const Bf16Chunk* b,
                                                                     float* c, std::int64_t ldc, bool accumulate) {
  amx_tile(chunks, a, a_row_bytes, 64, b, c, ldc, accumulate);
}

// f16 products summed in f16 (32 lanes a register) for kFp16Block steps, then converted and
// added to f32 accumulators: twice the f32 FMA rate, at the cost of kFp16Block f16 roundings
// per block (matmul_tolerance allows for them: MatmulInfo::narrow_accumulation).
constexpr int kFp16Block = 16;

template <int MR>
__attribute__((target("avx512f,avx512bw,avx512fp16"))) void ukr_fp16(std::int64_t steps, const std::uint16_t* a,
                                                                     const std::uint16_t* b, float* c,
                                                                     std::int64_t ldc, bool accumulate) {
  __m512 acc[MR][2];  // f32: columns 0-15, 16-31
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  prefetch_tile(c, ldc, MR, 128);
  for (std::int64_t s0 = 0; s0 < steps; s0 += kFp16Block) {
    const std::int64_t s_end = std::min<std::int64_t>(steps, s0 + kFp16Block);
    __m512h sum[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) sum[r] = _mm512_setzero_ph();
    for (std::int64_t s = s0; s < s_end; ++s) {
      const __m512h bs = _mm512_castsi512_ph(_mm512_load_si512(b + s * 32));
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r)
        sum[r] = _mm512_fmadd_ph(_mm512_castsi512_ph(_mm512_set1_epi16(std::int16_t(a[s * MR + r]))), bs, sum[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i bits = _mm512_castph_si512(sum[r]);
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_cvtph_ps(_mm512_castsi512_si256(bits)));
      acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_cvtph_ps(_mm512_extracti64x4_epi64(bits, 1)));
    }
  }
  zmm::store_tile<float, MR, 2>(acc, c, ldc, accumulate);
}

// ---- the loops ----------------------------------------------------------------------------------

// A kernel and its blocking: P is what the panels hold, T what C accumulates in.
template <class P, class T>
struct Kernel {
  int mr, nr;                // the micro-tile
  int k_per_step;            // k elements per packed step: 1, or 2 (bf16 pairs)
  std::int64_t kc, mc, nc;   // k block (a multiple of k_per_step), A panel rows, B block columns (x nr)
  void (*pack_a)(const View&, std::int64_t i0, int mr, std::int64_t p0, std::int64_t kc, P* dst);
  void (*pack_b)(const View&, std::int64_t p0, std::int64_t kc, std::int64_t j0, int nr, P* dst);
  using Ukr = void (*)(std::int64_t steps, const P* a, const P* b, T* c, std::int64_t ldc, bool accumulate);
  Ukr ukr;
  // A whole B block of unit column stride at once (pack_b_rows), where the kernel has one.
  void (*pack_b_rows)(const View&, std::int64_t p0, std::int64_t kc, std::int64_t j0, std::int64_t cols, int nr,
                      std::int64_t pitch, P* dst) = nullptr;
  void (*begin)() = nullptr, (*end)() = nullptr;  // around each thread's block (AMX: the tile configuration)
  // ukr_rows[r]: the first r < mr rows of a sliver into C (m's edge); null where the kernel has none
  // (every r of a kernel of more than 8 rows: gemm_block reads no further than r = 7).
  std::array<Ukr, 8> ukr_rows{};
  // A read where it lies instead of packed, for a sliver of mr whole rows with k contiguous and a
  // k block of whole steps: ukr_a_in_place(steps, &A(i, p0), A's row stride in bytes, b, c, ldc,
  // accumulate). Null where A is always packed (Note [the loops]: AMX only).
  using UkrAInPlace = void (*)(std::int64_t steps, const unsigned char* a, std::int64_t a_row_bytes, const P* b,
                               T* c, std::int64_t ldc, bool accumulate);
  UkrAInPlace ukr_a_in_place = nullptr;
};

// Whether `kernel` reads A's whole-row slivers in place for this A (else it packs every sliver):
// where one k block covers k. Note [the loops] has what was measured.
template <class P, class T>
bool reads_a_in_place(const Kernel<P, T>& kernel, const View& a) {
  return kernel.ukr_a_in_place && a.cs == 1 && a.cols % kernel.k_per_step == 0 && a.cols <= kernel.kc;
}

constexpr int kMaxTile = 32 * 32;  // the largest mr x nr

// Kernel::ukr_rows of an MR-row kernel: make(std::integral_constant<int, r>) for r = 1 .. MR - 1.
template <class Ukr, int MR, class Make>
std::array<Ukr, 8> short_row_kernels(Make make) {
  static_assert(MR <= 8);
  std::array<Ukr, 8> table{};
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((table[R + 1] = make(std::integral_constant<int, R + 1>{})), ...);
  }(std::make_integer_sequence<int, MR - 1>{});
  return table;
}

// 64-byte aligned scratch memory (packed panels, workspaces), first touched by the thread that
// uses it.
template <class T>
struct AlignedArray {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> memory;
  T* data = nullptr;
  explicit AlignedArray(std::int64_t count) {
    const std::size_t bytes = (std::size_t(std::max<std::int64_t>(count, 1)) * sizeof(T) + 63) / 64 * 64;
    memory.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    if (!memory) throw std::bad_alloc();
    data = memory.get();
  }
};

// Where the boundaries of `parts` near-equal shares of [0, count) lie, in multiples of `unit`.
std::int64_t share_boundary(std::int64_t count, int parts, int index, std::int64_t unit) {
  if (index >= parts) return count;
  const std::int64_t units = (count + unit - 1) / unit;
  return std::min(count, units * index / parts * unit);
}

// How many ways the threads split n (the rest split m): the split that packs the fewest elements
// (each thread packs the A rows and B columns of its block of C), keeping at least two
// micro-tiles per share. A tie (square C) goes to rows: each thread's A panel is then half as
// tall and stays nearer its core; on Zen 4, two threads, calls alternated in one process, rows
// beat columns by 7% (f32 256^3), 11% (512^3), 4.5% (1024^3), 2% (2048^3), 1% (4096^3), f64
// 1024^3 7%, bf16 256^3 10%. A read in place (!packs_a: AMX, one k block) costs nothing, and
// a column split then packs half of B a thread.
int column_ways(std::int64_t m, std::int64_t n, std::int64_t k, int threads, int mr, int nr, bool packs_a) {
  int best = 1;
  double best_packed = -1;
  for (int ways = 1; ways <= threads; ++ways) {
    if (threads % ways) continue;
    const int row_ways = threads / ways;
    if (ways > 1 && n < std::int64_t(ways) * 2 * nr) continue;
    if (row_ways > 1 && m < std::int64_t(row_ways) * 2 * mr) continue;
    const double packed = (packs_a ? double(m) * double(k) * ways : 0.0) + double(k) * double(n) * row_ways;
    if (best_packed < 0 || packed < best_packed) best = ways, best_packed = packed;
  }
  return best;
}

// Packing buffers for one problem, made in prepare() and reused by every call: an A panel and a
// B block per thread.
template <class P>
struct Panels {
  int threads;
  std::vector<AlignedArray<P>> a, b;
  Panels(int thread_count, std::int64_t a_elements, std::int64_t b_elements) : threads(thread_count) {
    for (int t = 0; t < threads; ++t) {
      a.emplace_back(a_elements);
      b.emplace_back(b_elements);
    }
  }
};

// Where B's slivers lie in a packed block: sliver s at s·pitch elements. One cache line more than
// a sliver, so that slivers of a power-of-two size do not all start in the same L1 set (pack_b_rows
// writes a row of every sliver in turn: 1024^3 f32 spent 4% of its time in those stores so).
template <class P, class T>
std::int64_t sliver_pitch(const Kernel<P, T>& kernel, std::int64_t steps) {
  return kernel.nr * steps + std::int64_t(64 / sizeof(P));
}

template <class P, class T>
std::shared_ptr<Panels<P>> make_panels(const Kernel<P, T>& kernel, std::int64_t m, std::int64_t k) {
  const std::int64_t steps = (std::min(kernel.kc, k) + kernel.k_per_step - 1) / kernel.k_per_step;
  const std::int64_t a_rows = (std::min(kernel.mc, m) + kernel.mr - 1) / kernel.mr * kernel.mr;
  const std::int64_t b_elements = kernel.nc / kernel.nr * sliver_pitch(kernel, steps);
  return std::make_shared<Panels<P>>(omp_get_max_threads(), a_rows * steps, b_elements);
}

// A's slivers of rows i0 .. i_end (a_slivers of them) and k p0 .. p0 + kcur into a_panel, but for
// those read in place (a_in_place: the slivers of mr whole rows).
template <class P, class T>
void pack_a_panel(const Kernel<P, T>& K, const View& a, bool a_in_place, std::int64_t i0, std::int64_t i_end,
                  std::int64_t a_slivers, std::int64_t p0, std::int64_t kcur, std::int64_t steps, P* a_panel) {
  for (std::int64_t s = 0; s < a_slivers; ++s)
    if (!(a_in_place && i0 + (s + 1) * K.mr <= i_end))
      K.pack_a(a, i0 + s * K.mr, K.mr, p0, kcur, a_panel + s * K.mr * steps);
}

// The micro-kernel over every A sliver x B sliver of one k block (Note [the loops]): C's rows i0 ..
// min(i0 + a_slivers·mr, i_end) by columns j0 .. j0 + ncur; A's slivers packed at a_panel or, those
// of mr whole rows where a_in_place, read in place; B's at b_panel + sb·pitch.
template <class P, class T>
void run_tiles(const Kernel<P, T>& K, const View& a, bool a_in_place, std::int64_t i0, std::int64_t i_end,
               std::int64_t a_slivers, std::int64_t p0, std::int64_t steps, const P* a_panel, std::int64_t j0,
               std::int64_t ncur, const P* b_panel, std::int64_t pitch, T* c, std::int64_t ldc) {
  alignas(64) T edge[kMaxTile];
  const std::int64_t b_slivers = (ncur + K.nr - 1) / K.nr;
  for (std::int64_t s = 0; s < a_slivers; ++s) {
    const std::int64_t i = i0 + s * K.mr;
    const int rows = int(std::min<std::int64_t>(K.mr, i_end - i));
    const P* a_sliver = a_panel + s * K.mr * steps;
    const unsigned char* a_rows = a_in_place && rows == K.mr ? a.at(i, p0) : nullptr;
    // The kernel that writes this sliver's rows straight into C, or null: a kernel of more
    // than 8 rows (AMX's 32) has no short-row kernels, and its edge goes through `edge`.
    typename Kernel<P, T>::Ukr ukr = K.ukr;
    if (rows < K.mr) ukr = std::size_t(rows) < K.ukr_rows.size() ? K.ukr_rows[std::size_t(rows)] : nullptr;
    for (std::int64_t sb = 0; sb < b_slivers; ++sb) {
      const std::int64_t j = j0 + sb * K.nr;
      const int cols = int(std::min<std::int64_t>(K.nr, j0 + ncur - j));
      const P* b_sliver = b_panel + sb * pitch;
      const bool direct = cols == K.nr && ukr;  // into C, else into `edge`
      T* const out = direct ? c + i * ldc + j : edge;
      const std::int64_t ld = direct ? ldc : K.nr;
      const bool accumulate = direct && p0 > 0;
      if (a_rows)
        K.ukr_a_in_place(steps, a_rows, a.rs * a.size, b_sliver, out, ld, accumulate);
      else
        (direct ? ukr : K.ukr)(steps, a_sliver, b_sliver, out, ld, accumulate);
      if (direct) continue;
      for (int r = 0; r < rows; ++r)
        for (int cc = 0; cc < cols; ++cc) {
          T& dst = c[(i + r) * ldc + j + cc];
          dst = (p0 > 0 ? dst : T{}) + edge[r * K.nr + cc];
        }
    }
  }
}

// One thread's block of C (rows i_begin .. i_end, columns j_begin .. j_end): Note [the loops].
// a_in_place: reads_a_in_place(K, a), decided once by gemm, whose split of C assumes it.
template <class P, class T>
void gemm_block(const Kernel<P, T>& K, const View& a, const View& b, T* c, std::int64_t ldc, bool a_in_place,
                std::int64_t i_begin, std::int64_t i_end, std::int64_t j_begin, std::int64_t j_end, P* a_panel,
                P* b_panel) {
  const std::int64_t k = a.cols;
  // B blocks of near-equal width, at most K.nc.
  const std::int64_t width = j_end - j_begin;
  const std::int64_t nc_blocks = std::max<std::int64_t>(1, (width + K.nc - 1) / K.nc);
  const std::int64_t nc = ((width + nc_blocks - 1) / nc_blocks + K.nr - 1) / K.nr * K.nr;
  for (std::int64_t i0 = i_begin; i0 < i_end; i0 += K.mc) {
    const std::int64_t a_slivers = (std::min(K.mc, i_end - i0) + K.mr - 1) / K.mr;
    for (std::int64_t p0 = 0; p0 < k; p0 += K.kc) {
      const std::int64_t kcur = std::min(K.kc, k - p0);
      const std::int64_t steps = (kcur + K.k_per_step - 1) / K.k_per_step, pitch = sliver_pitch(K, steps);
      pack_a_panel(K, a, a_in_place, i0, i_end, a_slivers, p0, kcur, steps, a_panel);
      for (std::int64_t j0 = j_begin; j0 < j_end; j0 += nc) {
        const std::int64_t ncur = std::min(nc, j_end - j0);
        if (K.pack_b_rows && b.cs == 1)
          K.pack_b_rows(b, p0, kcur, j0, ncur, K.nr, pitch, b_panel);
        else
          for (std::int64_t sb = 0; sb * K.nr < ncur; ++sb)
            K.pack_b(b, p0, kcur, j0 + sb * K.nr, K.nr, b_panel + sb * pitch);
        run_tiles(K, a, a_in_place, i0, i_end, a_slivers, p0, steps, a_panel, j0, ncur, b_panel, pitch, c, ldc);
      }
    }
  }
}

// C (T, unit column stride, row stride ldc) = A·B by `kernel`. Each thread computes its own
// block of C, a tm x tn grid of them, packing what its block needs: no thread waits for another
// until the end (on a shared machine, a thread that loses its core then delays only itself).
template <class P, class T>
void gemm(const Kernel<P, T>& K, const View& a, const View& b, T* c, std::int64_t ldc, Panels<P>& panels) {
  const std::int64_t m = a.rows, k = a.cols, n = b.cols;
  const int threads = double(m) * double(n) * double(k) > kParallelWork ? std::min(panels.threads, omp_get_max_threads()) : 1;
  const bool a_in_place = reads_a_in_place(K, a);
  const int tn = column_ways(m, n, k, threads, K.mr, K.nr, !a_in_place), tm = threads / tn;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int tn_i = t % tn, tm_i = t / tn;
    const std::int64_t i_begin = share_boundary(m, tm, tm_i, K.mr), i_end = share_boundary(m, tm, tm_i + 1, K.mr);
    const std::int64_t j_begin = share_boundary(n, tn, tn_i, K.nr), j_end = share_boundary(n, tn, tn_i + 1, K.nr);
    if (i_begin < i_end && j_begin < j_end) {
      if (K.begin) K.begin();
      gemm_block(K, a, b, c, ldc, a_in_place, i_begin, i_end, j_begin, j_end, panels.a[std::size_t(t)].data,
                 panels.b[std::size_t(t)].data);
      if (K.end) K.end();
    }
  }
}

// ---- the variants' plumbing ---------------------------------------------------------------------

// C's element (i, j) = value, rounded once to C's dtype.
void write_outputs(const TensorRef& c, const auto* values, double alpha) {
  const std::int64_t m = c.sizes[0], n = c.sizes[1];
  auto* base = static_cast<unsigned char*>(c.element_data());
  const std::int64_t size = std::int64_t(c.element_size());
#pragma omp parallel for schedule(static) if (double(m) * double(n) > kParallelWork)
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      unsigned char* out = base + (i * c.strides[0] + j * c.strides[1]) * size;
      const double v = alpha * double(values[i * n + j]);
      switch (c.dtype) {
        case DType::f32: {
          const float f = float(v);
          std::memcpy(out, &f, 4);
          break;
        }
        case DType::f64: std::memcpy(out, &v, 8); break;
        case DType::f16:
        case DType::bf16: {
          const auto bits = std::uint16_t(encode_f32(c.dtype, float(v)));
          std::memcpy(out, &bits, 2);
          break;
        }
        default: store_element(out, c.dtype, v);
      }
    }
}

// C of the accumulator type with unit column stride, rows not overlapping, no scale: accumulated
// in place. Otherwise through a workspace.
template <class T>
bool writes_in_place(const MatmulProblem& p) {
  const DType accumulator = std::is_same_v<T, double> ? DType::f64 : DType::f32;
  const std::int64_t m = p.m(), n = p.n();
  return p.c.dtype == accumulator && (n == 1 || p.c.strides[1] == 1) && (m == 1 || p.c.strides[0] >= n) &&
         alpha_of(p) == 1.0;
}

template <class P, class T>
Runner runner(const MatmulProblem& p, const Kernel<P, T>& kernel) {
  const std::int64_t m = p.m(), n = p.n(), k = p.k();
  if (m == 0 || n == 0) return [](Stream) {};
  if (k == 0)
    return [p](Stream) {
      const std::vector<double> zeros(std::size_t(p.m() * p.n()), 0.0);
      write_outputs(p.c, zeros.data(), 1.0);
    };
  auto panels = make_panels(kernel, m, k);
  const View a(p.a), b(p.b);
  if (writes_in_place<T>(p)) {
    T* c = p.c.ptr<T>();
    const std::int64_t ldc = m == 1 ? n : p.c.strides[0];
    return [kernel, a, b, c, ldc, panels](Stream) { gemm(kernel, a, b, c, ldc, *panels); };
  }
  auto workspace = std::make_shared<AlignedArray<T>>(m * n);
  return [kernel, a, b, panels, workspace, p](Stream) {
    gemm(kernel, a, b, workspace->data, p.n(), *panels);
    write_outputs(p.c, workspace->data, alpha_of(p));
  };
}

// The packers of a panel of floats for the operand's dtype (decoded while packing).
template <class P>
struct Packers {
  void (*a)(const View&, std::int64_t, int, std::int64_t, std::int64_t, P*);
  void (*b)(const View&, std::int64_t, std::int64_t, std::int64_t, int, P*);
  void (*b_rows)(const View&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, std::int64_t, P*);
};

template <class From>
Packers<float> f32_packers_from() {
  return {pack_a<From, float>, pack_b<From, float>, pack_b_rows<From, float>};
}

Packers<float> f32_packers(DType dtype) {
  switch (dtype) {
    case DType::f32: return f32_packers_from<FromF32>();
    case DType::bf16: return f32_packers_from<FromBf16>();
    case DType::f16: return f32_packers_from<FromF16>();
    case DType::f8e4m3: return f32_packers_from<FromE4M3>();
    case DType::f8e5m2: return f32_packers_from<FromE5M2>();
    case DType::f64: break;
  }
  throw std::logic_error("f32_packers: f64 is packed as f64");
}

enum class Isa { plain, avx2, avx512 };

// The widest this CPU has; $FLOPSCOPE_MATMUL_ISA=avx2 (or plain) caps it, so that the tests
// reach the AVX2 kernels on an AVX-512 machine (and the AVX-512 and AMX variants are skipped).
Isa widest_isa() {
  const char* cap = std::getenv("FLOPSCOPE_MATMUL_ISA");
  const std::string limit = cap ? cap : "avx512";
  if (limit == "avx512" && !cpu_lacks({"avx512f"})) return Isa::avx512;
  if (limit != "plain" && !cpu_lacks({"avx2", "fma"})) return Isa::avx2;
  return Isa::plain;
}

// Why an AVX-512 (or AMX) variant does not run where the CPU has the ISA: the cap.
std::optional<std::string> isa_capped() {
  if (widest_isa() == Isa::avx512) return std::nullopt;
  const char* cap = std::getenv("FLOPSCOPE_MATMUL_ISA");
  return "FLOPSCOPE_MATMUL_ISA=" + std::string(cap ? cap : "") + " caps the ISA below AVX-512";
}

// Note [blocking]: from this CPU's cache sizes, read at run time (sysfs; 32 KiB, 1 MiB and 8 MiB
// where unknown). kc: the A sliver (mr x kc), reused by every B sliver of a block, in half the
// L1 (KcFrom::l1); nc: the B block (kc x nc), reused by every A sliver of the panel, in half the
// L2, at least 4 slivers wide; mc: the A panel (mc x kc) in a share of the L3 (each core's), at
// most 256 slivers.
// Every k block after the first is one more pass over C (read and written back: 16 MiB of f32 at
// 2048^2, past the core's L3 share), and the L1 rule cuts k into many (Zen 4, f32: kc = 680, so
// 2048 in four blocks, the last of 8, and 4096 in seven). The AVX-512 kernels take kc from the L2
// instead (KcFrom::l2): as long as a B block of the least width (4 slivers) fills the L2. Their A
// sliver then outgrows the L1, which costs nothing measurable: a step reads 24 bytes of it (48 in
// f64) beside 256 of the B sliver, which streams from the L2 either way. Zen 4 (1 MiB L2: f32 and f64 kc 680
// -> 1024, bf16 1360 -> 2048), the two rules alternated in one process (2-3 runs of 5-120 calls
// each): f32 1024^3 +1.0/+2.5/-0.8%, 2048^3 +2.5/+1.1/+1.9%, 4096^3 +1.8/+2.7%; f64 2048^3
// +2.5/+4.0%; bf16 2048^3 -0.6/+1.6/+3.2%, 4096^3 +2.3/+2.0% (1024^3, one block under either rule:
// +0.5/+0.2/0.0%). Longer still (kc = k) was within noise of it: f32 4096^3 +5.3/+3.6% against
// +3.2/+3.7%. The AVX2, AMX and AVX512-FP16 kernels keep the L1 rule: no CPU of theirs at hand to
// measure on.
// That B block fills the whole L2 on AMD only. On the Intel Xeon VM (2 MiB L2, 480 MiB L3) a B
// block of the whole L2 halved the rate (f32 own / OpenBLAS in a default report: 2048^3 0.51x,
// 4096^3 0.46x), and the rate follows the block's bytes, not its shape (f32 2048^3 on two threads,
// kc x nc: 512 x 256 291 GFLOP/s, 256 x 1024 274, 1024 x 256 253, 768 x 512 206, 512 x 1024 129,
// 1024 x 1024 88). A Zen's L3 is a victim cache of its L2s and gives back at once what the L2
// loses; a Xeon's mesh L3 does not. So elsewhere the block takes a quarter of the L2 (kc 2048 ->
// 512 in f32 and f64; a half, kc 1024, was 0.94-0.98x OpenBLAS at 2048^3). Xeon, the binaries
// before and after alternated twice, own / the faster of oneDNN and OpenBLAS in one process:
// f32 1024^3 0.97/0.98 -> 1.07/1.02x, 2048^3 0.54/0.72 -> 1.01/1.02x, 4096^3 0.59/0.67 ->
// 1.04/0.97x; f64 2048^3 0.59/0.62 -> 1.03/1.10x, 4096^3 0.54/0.60 -> 1.04/1.01x.
enum class KcFrom { l1, l2 };

struct Blocking {
  std::int64_t kc, mc, nc;
};

Blocking cache_blocking(int mr, int nr, int k_per_step, std::int64_t element_bytes, KcFrom kc_from) {
  const CpuInfo& cpu = this_cpu();
  const auto bytes = [](std::size_t measured, std::int64_t fallback) {
    return measured ? std::int64_t(measured) : fallback;
  };
  const std::int64_t l1 = bytes(cpu.l1d_bytes, 32 << 10), l2 = bytes(cpu.l2_bytes, 1 << 20);
  const std::int64_t l3_share = bytes(cpu.l3_bytes, 8 << 20) / std::max(1, cpu.cores);
  const auto round_down = [](std::int64_t value, std::int64_t unit, std::int64_t least) {
    return std::max(least, value / unit * unit);
  };
  const std::int64_t k_unit = std::max(k_per_step, 8);
  std::int64_t kc, nc;
  if (kc_from == KcFrom::l1) {
    kc = round_down(l1 / 2 / (mr * element_bytes), k_unit, k_unit);
    nc = round_down(l2 / 2 / (kc * element_bytes), nr, 4 * nr);
  } else {  // a B block of the least width filling the L2 (AMD), a quarter of it (others)
    const std::int64_t b_block = cpu.amd_caches() ? l2 : l2 / 4;
    nc = 4 * nr;
    kc = round_down(b_block / (nc * element_bytes), k_unit, k_unit);
  }
  const std::int64_t mc = std::min<std::int64_t>(round_down(l3_share / 2 / (kc * element_bytes), mr, 4 * mr), 256 * mr);
  return {kc, mc, nc};
}

template <class P, class T>
Kernel<P, T> blocked_kernel(int mr, int nr, int k_per_step, std::int64_t element_bytes,
                            decltype(Kernel<P, T>::pack_a) pack_a, decltype(Kernel<P, T>::pack_b) pack_b,
                            decltype(Kernel<P, T>::ukr) ukr,
                            decltype(Kernel<P, T>::pack_b_rows) pack_b_rows = nullptr, KcFrom kc_from = KcFrom::l1) {
  const Blocking blocking = cache_blocking(mr, nr, k_per_step, element_bytes, kc_from);
  return {mr, nr, k_per_step, blocking.kc, blocking.mc, blocking.nc, pack_a, pack_b, ukr, pack_b_rows};
}

Kernel<float, float> f32_kernel(Isa isa, DType a_dtype, DType b_dtype) {
  using Ukr = Kernel<float, float>::Ukr;
  const Packers<float> pa = f32_packers(a_dtype), pb = f32_packers(b_dtype);
  switch (isa) {
    case Isa::avx512: {
      auto kernel = blocked_kernel<float, float>(6, 64, 1, 4, a_dtype == DType::f32 ? pack_a_f32_avx512 : pa.a,
                                                 b_dtype == DType::f32 ? pack_b_f32_avx512 : pb.b,
                                                 zmm::ukr<float, 6, 4>,
                                                 b_dtype == DType::f32 ? pack_b_rows_avx512<float> : pb.b_rows,
                                                 KcFrom::l2);
      kernel.ukr_rows = short_row_kernels<Ukr, 6>([](auto r) { return zmm::ukr<float, r(), 4, 6>; });
      return kernel;
    }
    case Isa::avx2: {
      auto kernel = blocked_kernel<float, float>(6, 16, 1, 4, pa.a, pb.b, ymm::ukr<float, 6>, pb.b_rows);
      kernel.ukr_rows = short_row_kernels<Ukr, 6>([](auto r) { return ymm::ukr<float, r(), 2, 6>; });
      return kernel;
    }
    case Isa::plain: break;
  }
  return blocked_kernel<float, float>(4, 16, 1, 4, pa.a, pb.b, ukr_plain<float, 4, 16>, pb.b_rows);
}

Kernel<double, double> f64_kernel(Isa isa) {
  constexpr auto pack_a64 = pack_a<FromF64, double>;
  constexpr auto pack_b64 = pack_b<FromF64, double>;
  constexpr auto rows64 = pack_b_rows<FromF64, double>;
  using Ukr = Kernel<double, double>::Ukr;
  switch (isa) {
    case Isa::avx512: {
      auto kernel = blocked_kernel<double, double>(6, 32, 1, 8, pack_a64, pack_b64, zmm::ukr<double, 6, 4>,
                                                   pack_b_rows_avx512<double>, KcFrom::l2);
      kernel.ukr_rows = short_row_kernels<Ukr, 6>([](auto r) { return zmm::ukr<double, r(), 4, 6>; });
      return kernel;
    }
    case Isa::avx2: {
      auto kernel = blocked_kernel<double, double>(6, 8, 1, 8, pack_a64, pack_b64, ymm::ukr<double, 6>, rows64);
      kernel.ukr_rows = short_row_kernels<Ukr, 6>([](auto r) { return ymm::ukr<double, r(), 2, 6>; });
      return kernel;
    }
    case Isa::plain: break;
  }
  return blocked_kernel<double, double>(4, 8, 1, 8, pack_a64, pack_b64, ukr_plain<double, 4, 8>, rows64);
}

// The label words of the kernel that ran: its ISA and micro-tile, and the blocking.
template <class P, class T>
void tell_choice(const MatmulProblem& p, const char* isa, const Kernel<P, T>& kernel) {
  if (!p.choice) return;
  *p.choice = std::string("isa=") + isa + " ukr=" + std::to_string(kernel.mr) + "x" + std::to_string(kernel.nr) +
              " kc=" + std::to_string(kernel.kc) + " mc=" + std::to_string(kernel.mc) + " nc=" + std::to_string(kernel.nc);
}

const char* isa_name(Isa isa) { return isa == Isa::avx512 ? "avx512" : isa == Isa::avx2 ? "avx2" : "plain"; }

Runner prepare_packed(const MatmulProblem& p, Isa isa) {
  if (p.mode == ComputeMode::f64) {
    const auto kernel = f64_kernel(isa);
    tell_choice(p, isa_name(isa), kernel);
    return runner(p, kernel);
  }
  const auto kernel = f32_kernel(isa, p.a.dtype, p.b.dtype);
  tell_choice(p, isa_name(isa), kernel);
  return runner(p, kernel);
}

// ---- the variants ------------------------------------------------------------------------------

// Every CPU variant: the problem is well formed and on the CPU.
std::optional<std::string> cpu_problem_error(const MatmulProblem& p) {
  if (auto error = matmul_problem_error(p)) return error;
  if (!p.c.device.is_cpu()) return "a CPU kernel, not for " + p.c.device.str();
  return std::nullopt;
}

// tf32 is a tensor-core mode: no CPU variant computes it.
bool not_tf32(const MatmulProblem& p) { return p.mode != ComputeMode::tf32; }

void run_naive(const MatmulProblem& p, Stream) { matmul_reference(p); }

std::optional<std::string> own_unavailable(const MatmulProblem& p) { return cpu_problem_error(p); }

Runner prepare_blocked(const MatmulProblem& p) { return prepare_packed(p, Isa::plain); }

std::optional<std::string> microkernel_unavailable(const MatmulProblem& p) {
  if (auto error = cpu_problem_error(p)) return error;
  if (widest_isa() == Isa::plain) return cpu_lacks({"avx2", "fma"});
  return std::nullopt;
}

Runner prepare_microkernel(const MatmulProblem& p) { return prepare_packed(p, widest_isa()); }

bool computes_bf16(const MatmulProblem& p) { return p.mode == ComputeMode::bf16; }
bool computes_f16(const MatmulProblem& p) { return p.mode == ComputeMode::f16; }

std::optional<std::string> dpbf16_unavailable(const MatmulProblem& p) {
  if (auto error = cpu_problem_error(p)) return error;
  if (auto lacks = cpu_lacks({"avx512f", "avx512_bf16"})) return lacks;
  return isa_capped();
}

Runner prepare_dpbf16(const MatmulProblem& p) {
  // A step is a bf16 pair: 4 bytes of A per row and step.
  auto kernel = blocked_kernel<std::uint32_t, float>(6, 64, 2, 4, pack_a_pairs, pack_b_pairs, ukr_dpbf16<6, 4>,
                                                     pack_b_pairs_rows, KcFrom::l2);
  kernel.ukr_rows = short_row_kernels<decltype(kernel.ukr), 6>([](auto r) { return ukr_dpbf16<r(), 4, 6>; });
  kernel.kc *= 2;  // k elements: two a step
  tell_choice(p, "avx512_bf16", kernel);
  return runner(p, kernel);
}

std::optional<std::string> amx_unavailable(const MatmulProblem& p) {
  if (auto error = cpu_problem_error(p)) return error;
  if (auto lacks = cpu_lacks({"amx_tile", "amx_bf16"})) return lacks;
  if (auto capped = isa_capped()) return capped;
  return amx_refused();
}

Runner prepare_amx(const MatmulProblem& p) {
  // A chunk (32 k of a row) is 64 bytes: kc from 2-byte elements, a multiple of 32.
  auto kernel = blocked_kernel<Bf16Chunk, float>(32, 32, 32, 2, pack_a_amx, pack_b_amx, ukr_amx, pack_b_amx_rows);
  kernel.ukr_a_in_place = ukr_amx_a_in_place;
  kernel.begin = amx_begin;
  kernel.end = amx_end;
  tell_choice(p, "amx_bf16", kernel);
  return runner(p, kernel);
}

std::optional<std::string> fp16_unavailable(const MatmulProblem& p) {
  if (auto error = cpu_problem_error(p)) return error;
  if (auto lacks = cpu_lacks({"avx512f", "avx512bw", "avx512_fp16"})) return lacks;
  return isa_capped();
}

Runner prepare_fp16(const MatmulProblem& p) {
  const auto kernel = blocked_kernel<std::uint16_t, float>(8, 32, 1, 2, pack_a<Bits16, std::uint16_t>,
                                                           pack_b<Bits16, std::uint16_t>, ukr_fp16<8>,
                                                           pack_b_rows<Bits16, std::uint16_t>);
  tell_choice(p, "avx512_fp16", kernel);
  return runner(p, kernel);
}

constexpr auto cpu = Device::Kind::cpu;

const std::array<MatmulVariant, 8> kVariants = {{
    {"naive", "the reference loop: one output at a time, products and sums in f64", cpu, own_unavailable,
     direct<MatmulProblem, run_naive>, not_tf32, {.sums_in_f64 = true}, Role::reference},
    {"blocked", "cache-blocked, A and B packed into panels (narrow dtypes decoded to f32), plain C++ 4x16 inner kernel",
     cpu, own_unavailable, prepare_blocked, not_tf32, {.emulated = true}},
    {"microkernel",
     "blocked + register-blocked micro-kernel at the widest vectors (AVX-512 6x64, else AVX2 6x16), OpenMP; "
     "narrow dtypes emulated (decoded to f32 while packing)",
     cpu, microkernel_unavailable, prepare_microkernel, not_tf32, {.emulated = true}, Role::own, {.speed = 1}},
    {"microkernel_dpbf16", "microkernel on bf16 pairs by AVX512_BF16 vdpbf16ps, f32 accumulation, 6x64", cpu,
     dpbf16_unavailable, prepare_dpbf16, computes_bf16, {}, Role::own, {.speed = 2}},
    {"microkernel_amx",
     "bf16 by AMX tiles: TDPBF16PS on 2x2 16x16 f32 C tiles (32x32), B packed in VNNI pairs, f32 accumulation",
     cpu, amx_unavailable, prepare_amx, computes_bf16, {}, Role::own, {.speed = 3}},
    {"microkernel_fp16", "microkernel by AVX512-FP16 vfmadd231ph: f16 sums of 16 products, then f32 accumulation, 8x32",
     cpu, fp16_unavailable, prepare_fp16, computes_f16, {.narrow_accumulation = kFp16Block}, Role::own, {.speed = 2}},
    {"onednn", "oneDNN's matmul primitive (PyTorch's CPU matmul)", cpu, onednn_matmul_unavailable,
     onednn_matmul_prepare, not_tf32, {.library = "oneDNN"}, Role::vendor},
    {"openblas", "OpenBLAS cblas_sgemm / cblas_dgemm (numpy's matmul)", cpu, openblas_matmul_unavailable,
     openblas_matmul_prepare, not_tf32, {.library = "OpenBLAS"}, Role::vendor},
}};

}  // namespace

std::span<const MatmulVariant> cpu_matmul_variants() { return kVariants; }

}  // namespace flopscope::kernels
