// Strided copies on the CPU: dst (contiguous) = src (any view), .contiguous() of a view.
// strided.hpp says how a problem becomes a plan of rows, a transpose or a gather.
//
// Variants (each on every OpenMP thread):
//   naive    the output in row-major order, one contiguous chunk of it per thread, one element at
//            a time from src's strides (an index counter, no division per element): a plain loop.
//   blocked  by the plan's kind: rows by memcpy; transposes in tiles of 128 x 128 bytes' worth of
//            elements through an L1 buffer (src rows in, dst rows out), so that every line is read
//            or written whole, once; gathers element by element.
//   simd     blocked, with the tiles transposed in registers at the widest vector width the CPU
//            has (AVX-512: 16 x 16 4-byte, 8 x 8 8-byte and 32 x 32 2-byte elements in zmm; AVX2:
//            8 x 8, 4 x 4 and 16 x 16 in ymm; 1-byte 16 x 16 in xmm on both) straight from src to
//            dst, in blocks one micro-tile high and 4 KiB of each src row long (src rows read in
//            order a page at a time, dst rows written in order a line at a time; where dst rows
//            start off a line, blocks as tall as fit L1, from this CPU's size); ragged edges by the
//            same micro-kernel through an L1 buffer; rows by vector copies, expanded columns by
//            broadcast stores, slices at steps 2-16 by whole-vector loads merged with two-source
//            permutes (AVX-512; other steps and AVX2 element by element, 4- and 8-byte ones a
//            vector at a time into non-temporal stores), and non-temporal stores when src and dst
//            together exceed the last-level cache (on a 64-byte aligned destination; where dst rows
//            start off a line, 4-byte elements on AVX-512 by micro-tile rows shifted onto whole
//            lines: skewed_tiles_avx512).
//            AVX-512 or AVX2 chosen at run time; a CPU with neither is a skip that says so.
//   reorder  oneDNN's reorder primitive on the view's own dims and strides (the vendor reference;
//            PyTorch runs it for its mkldnn tensors, its plain .contiguous() has its own copy
//            loop). Elements move as u8, bf16 or s32 by size, 8-byte ones as two s32.
#include "flopscope/kernels/strided.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "flopscope/checked.hpp"
#include "flopscope/cpu_info.hpp"
#include "isa.hpp"
#include "parallel.hpp"
#ifdef FLOPSCOPE_HAVE_ONEDNN
#include "dnnl_util.hpp"
#endif

// GCC 12 reports its own _mm512_undefined_*() placeholders inside the intrinsic headers as
// uninitialized (GCC bug 105593); nothing of ours is.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace flopscope::kernels {

std::optional<std::string> needs_contiguous_destination(const CopyProblem& problem) {
  const TensorRef &dst = problem.dst, &src = problem.src;
  if (!dst.is_contiguous()) return "needs a contiguous destination (" + dst.str() + ")";
  if (!std::equal(dst.shape().begin(), dst.shape().end(), src.shape().begin(), src.shape().end()) ||
      dst.element_size() != src.element_size())
    return "operands differ in shape or element size (" + dst.str() + " <- " + src.str() + ")";
  return std::nullopt;
}

StridedPlan plan_strided_copy(const CopyProblem& problem) {
  const TensorRef& src = problem.src;
  StridedPlan plan;
  plan.element_size = static_cast<std::int64_t>(src.element_size());
  plan.numel = src.numel();
  if (plan.numel == 0) return plan;
  // Innermost first: drop size-1 dimensions, merge a dimension into the one inside it where src
  // continues (stride = inner stride x inner size; two stride-0 dimensions merge too).
  std::array<std::int64_t, kMaxDims> sizes{}, strides{};
  int n = 0;
  for (int d = src.dims - 1; d >= 0; --d) {
    if (src.sizes[d] == 1) continue;
    if (n > 0 && src.strides[d] == strides[n - 1] * sizes[n - 1]) {
      sizes[n - 1] *= src.sizes[d];
      continue;
    }
    sizes[n] = src.sizes[d];
    strides[n] = src.strides[d];
    ++n;
  }
  plan.dims = n;
  std::int64_t stride = 1;
  for (int i = n - 1; i >= 0; --i) {
    plan.sizes[i] = sizes[n - 1 - i];
    plan.src_strides[i] = strides[n - 1 - i];
    plan.dst_strides[i] = stride;
    stride *= plan.sizes[i];
  }
  if (n == 0 || plan.src_strides[n - 1] == 1) return plan;  // rows
  for (int d = n - 2; d >= 0 && plan.src_strides[n - 1] != 0; --d)
    if (plan.src_strides[d] == 1) {
      plan.kind = StridedPlan::Kind::transpose;
      plan.pivot = d;
      return plan;
    }
  plan.kind = StridedPlan::Kind::gather;
  return plan;
}

namespace {

// ---- walking a plan ----

// The dimensions of a plan that a loop steps through (all of them, the outer ones of rows, the
// batch of a transpose), with the src and dst offsets of the current index.
struct Walker {
  int dims = 0;
  std::array<std::int64_t, kMaxDims> sizes{}, src_strides{}, dst_strides{}, index{};
  std::int64_t src = 0, dst = 0;

  // The plan's dimensions except `skip_a` and `skip_b` (-1: none).
  Walker(const StridedPlan& plan, int skip_a, int skip_b) {
    for (int d = 0; d < plan.dims; ++d) {
      if (d == skip_a || d == skip_b) continue;
      sizes[dims] = plan.sizes[d];
      src_strides[dims] = plan.src_strides[d];
      dst_strides[dims] = plan.dst_strides[d];
      ++dims;
    }
  }
  // Reorders the dimensions so that the walk goes through src in storage order (the largest src
  // stride outermost; stable, so dst order breaks ties).
  void in_src_order() {
    std::array<int, kMaxDims> order{};
    for (int d = 0; d < dims; ++d) order[std::size_t(d)] = d;
    std::stable_sort(order.begin(), order.begin() + dims, [&](int a, int b) { return src_strides[std::size_t(a)] > src_strides[std::size_t(b)]; });
    const Walker old = *this;
    for (int d = 0; d < dims; ++d) {
      const auto from = std::size_t(order[std::size_t(d)]);
      sizes[std::size_t(d)] = old.sizes[from];
      src_strides[std::size_t(d)] = old.src_strides[from];
      dst_strides[std::size_t(d)] = old.dst_strides[from];
    }
  }
  // Where the walk's innermost dimension scatters short dst rows over more than L1 holds while
  // another dimension's rows are dst neighbours (merge heads (B,H,T,d) -> (B,T,H,d): t's rows H·d
  // apart, h's d apart), walks that dimension in runs of up to `run_bytes` of src rows with the
  // neighbour dimension inside each run: a run's dst rows, for every value of the neighbour, are
  // one block of dst, written whole before the next (25 heads of GPT-2 XL: rows by rows 6400
  // bytes apart, a new page each, were 0.56x oneDNN's reorder on the Xeon). `row_bytes`: the
  // rows' length. How long a run should be differs by CPU (merge_run_bytes).
  void in_dst_tiles(std::int64_t row_bytes, std::int64_t l1_bytes, std::int64_t run_bytes) {
    const int a = dims - 1;
    if (dims < 2 || dims >= kMaxDims || src_strides[a] == 0 || sizes[a] * row_bytes <= l1_bytes) return;
    int b = -1;
    for (int d = 0; d < a; ++d)
      if (dst_strides[d] < dst_strides[a] && src_strides[d] != 0 && (b < 0 || dst_strides[d] < dst_strides[b])) b = d;
    if (b < 0) return;
    std::int64_t run = 1;
    while (2 * run * row_bytes <= run_bytes && sizes[a] % (2 * run) == 0) run *= 2;
    if (run == 1) return;
    const Walker old = *this;
    dims = 0;
    auto add = [&](std::int64_t size, std::int64_t src_stride, std::int64_t dst_stride) {
      sizes[std::size_t(dims)] = size;
      src_strides[std::size_t(dims)] = src_stride;
      dst_strides[std::size_t(dims)] = dst_stride;
      ++dims;
    };
    for (int d = 0; d < old.dims; ++d)
      if (d != a && d != b) add(old.sizes[std::size_t(d)], old.src_strides[std::size_t(d)], old.dst_strides[std::size_t(d)]);
    add(old.sizes[std::size_t(a)] / run, old.src_strides[std::size_t(a)] * run, old.dst_strides[std::size_t(a)] * run);
    add(old.sizes[std::size_t(b)], old.src_strides[std::size_t(b)], old.dst_strides[std::size_t(b)]);
    add(run, old.src_strides[std::size_t(a)], old.dst_strides[std::size_t(a)]);
  }
  std::int64_t count() const {
    std::int64_t n = 1;
    for (int d = 0; d < dims; ++d) n *= sizes[d];
    return n;
  }
  void seek(std::int64_t linear) {
    src = dst = 0;
    for (int d = dims - 1; d >= 0; --d) {
      index[d] = linear % sizes[d];
      linear /= sizes[d];
      src += index[d] * src_strides[d];
      dst += index[d] * dst_strides[d];
    }
  }
  void next() {
    for (int d = dims - 1; d >= 0; --d) {
      src += src_strides[d];
      dst += dst_strides[d];
      if (++index[d] < sizes[d]) return;
      src -= src_strides[d] * sizes[d];
      dst -= dst_strides[d] * sizes[d];
      index[d] = 0;
    }
  }
};

// fn(T{}) with T the unsigned integer of the plan's element size: elements move as bits.
template <class Fn>
void by_element_size(std::int64_t size, Fn&& fn) {
  switch (size) {
    case 1: return fn(std::uint8_t{});
    case 2: return fn(std::uint16_t{});
    case 4: return fn(std::uint32_t{});
    case 8: return fn(std::uint64_t{});
  }
  throw std::invalid_argument("strided copy: elements of " + std::to_string(size) + " bytes");
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Work below this many bytes stays on one thread.
constexpr std::int64_t kParallelBytes = std::int64_t{1} << 16;

// The bytes a strided copy moves through the caches: dst's, and every src line it reads. A slice at
// a step k reads k times its dst's bytes, up to a whole 64-byte line per element (x[:, ::4] of a
// 4096^2 f32 matrix reads 64 MiB for a 16 MiB dst).
std::int64_t footprint_bytes(const StridedPlan& plan) {
  std::int64_t src_element = plan.element_size;
  if (plan.kind == StridedPlan::Kind::gather) {
    const std::int64_t stride = plan.src_strides[plan.dims - 1], per_line = 64 / plan.element_size;
    const bool apart = stride > per_line || stride < -per_line;  // each element a line of its own
    src_element = apart ? 64 : std::max<std::int64_t>(1, stride < 0 ? -stride : stride) * plan.element_size;
  }
  return plan.numel * (plan.element_size + src_element);
}

// Stores bypass the caches (non-temporal) once what the copy moves does not fit the last level:
// the dst lines would be evicted by the src lines read after them anyway, and each ordinary store
// first reads its line (x[:, ::4], 4096^2 f32, with ordinary stores: 0.91x oneDNN's reorder).
bool streaming(const StridedPlan& plan) {
  return footprint_bytes(plan) > static_cast<std::int64_t>(cpu_streaming_threshold_bytes());
}

// A transpose streams its stores from a smaller size on: once src and dst together exceed the L2
// caches of all cores. Its dst lines are written one per row, rows apart, so that no prefetcher
// fetches them ahead and each store's read for ownership waits the full latency of the LLC:
// measured on a 2-core Xeon VM (2 MiB L2 each, 480 MiB LLC), 4096^2 f32 ran at 0.34x a copy with
// ordinary stores, 0.83x with streaming ones; bf16 0.26x and 0.65x.
bool streaming_transpose(const StridedPlan& plan) {
  const CpuInfo& cpu = this_cpu();
  const auto l2 = static_cast<std::int64_t>(cpu.l2_bytes) * std::max(1, cpu.cores);
  return streaming(plan) || (l2 > 0 && footprint_bytes(plan) > l2);
}

// ---- naive ----

template <class T>
void naive_typed(const StridedPlan& plan, T* dst, const T* src) {
  parallel_chunks(std::size_t(plan.numel), 64 / sizeof(T), std::size_t(kParallelBytes) / sizeof(T),
                  [&](std::size_t begin, std::size_t count) {
                    Walker w(plan, -1, -1);
                    w.seek(std::int64_t(begin));
                    T* out = dst + begin;
                    for (std::size_t i = 0; i < count; ++i, w.next()) out[i] = src[w.src];
                  });
}

void strided_naive(const CopyProblem& p, Stream) {
  const StridedPlan plan = plan_strided_copy(p);
  if (plan.numel == 0) return;
  by_element_size(plan.element_size, [&](auto tag) {
    using T = decltype(tag);
    naive_typed(plan, p.dst.ptr<T>(), p.src.ptr<const T>());
  });
}

// ---- the three kinds, for blocked and simd ----

// The rows of a plan (sizes[dims-1] elements, src_strides[dims-1] apart in src) in pieces of at
// most 16 KiB of dst: row_fn(dst_piece, src_piece, length) per piece, pieces split across threads
// (so that one long row, a merged slice's, still keeps every thread busy), in src's storage
// order: src is read as a stream and dst rows are written whole wherever they go (split heads:
// 28 GB/s instead of 6 on one Zen 4 core, where dst order read 256-byte rows 3 KiB apart); in
// tiles where that order scatters short rows far apart (Walker::in_dst_tiles: merge heads).
// Walker::in_dst_tiles's runs: 64 KiB of src rows on AMD, 4 KiB elsewhere. On Zen 4 each run of src
// is a stream its prefetchers follow only past a page's worth (same process, against a copy: runs of
// 4 KiB 0.49-0.69x, 16 KiB 0.84x, 64 KiB 0.75-0.92x, whole rows 0.94-1.03x). On the Intel Xeon the
// dst block must stay small instead: merge heads GPT-2 XL (h = 25), blocked / copy in one process,
// two rounds alternated: runs of 64 KiB 0.51/0.53x, 16 KiB 0.54/0.50x, 8 KiB 0.88/0.93x, 4 KiB
// 0.97/0.92x, 2 KiB 0.87/0.93x, 1 KiB 0.89/0.91x; h = 12: 64 KiB 0.72/0.78x, 4 KiB 0.89/0.88x
// (`XRUN` a throwaway environment variable over this constant; bench_strided --views=merge_heads
// --heads=8x1024x25x64 --variants=blocked,simd,reorder,copy).
std::int64_t merge_run_bytes() { return this_cpu().amd_caches() ? 64 << 10 : 4 << 10; }

template <class T, class RowFn>
void for_each_row(const StridedPlan& plan, T* dst, const T* src, RowFn&& row_fn) {
  const int inner = plan.dims - 1;
  const std::int64_t length = inner >= 0 ? plan.sizes[inner] : 1, step = inner >= 0 ? plan.src_strides[inner] : 0;
  const std::int64_t piece = 16384 / std::int64_t(sizeof(T)), pieces = ceil_div(length, piece);
  Walker outer(plan, inner, -1);
  outer.in_src_order();
  outer.in_dst_tiles(length * std::int64_t(sizeof(T)), std::int64_t(this_cpu().l1d_bytes ? this_cpu().l1d_bytes : 32 << 10),
                    merge_run_bytes());
  const std::int64_t items = outer.count() * pieces;
  const std::int64_t min_items = std::max<std::int64_t>(1, kParallelBytes / (std::min(length, piece) * std::int64_t(sizeof(T))));
  parallel_chunks(std::size_t(items), 1, std::size_t(min_items), [&](std::size_t begin, std::size_t count) {
    Walker w = outer;
    w.seek(std::int64_t(begin) / pieces);
    std::int64_t p = std::int64_t(begin) % pieces;
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t j0 = p * piece;
      row_fn(dst + w.dst + j0, src + w.src + j0 * step, std::min(piece, length - j0));
      if (++p == pieces) {
        p = 0;
        w.next();
      }
    }
    _mm_sfence();  // non-temporal stores, if any, are weakly ordered
  });
}

// A transpose: out[r][c] = in[c * S + r] over the pivot (r) and innermost (c) dimensions, per
// batch index, in blocks of `block_rows` x `block_cols` elements; tile_fn(dst, src, rows, cols, S, D)
// per block, blocks split across threads. Within a thread, blocks go along dst rows (c fastest).
template <class T, class TileFn>
void for_each_tile(const StridedPlan& plan, T* dst, const T* src, std::int64_t block_rows, std::int64_t block_cols,
                   TileFn&& tile_fn) {
  const int p = plan.pivot, in = plan.dims - 1;
  const std::int64_t rows = plan.sizes[p], cols = plan.sizes[in];
  const std::int64_t S = plan.src_strides[in], D = plan.dst_strides[p];
  Walker batch(plan, p, in);
  const std::int64_t row_blocks = ceil_div(rows, block_rows), col_blocks = ceil_div(cols, block_cols);
  const std::int64_t blocks = batch.count() * row_blocks * col_blocks;
  const std::int64_t min_blocks = std::max<std::int64_t>(1, kParallelBytes / (block_rows * block_cols * std::int64_t(sizeof(T))));
  parallel_chunks(std::size_t(blocks), 1, std::size_t(min_blocks), [&](std::size_t begin, std::size_t count) {
    Walker w = batch;
    for (std::size_t i = begin; i < begin + count; ++i) {
      const auto item = std::int64_t(i);
      const std::int64_t b = item / (row_blocks * col_blocks), within = item % (row_blocks * col_blocks);
      const std::int64_t rb = within / col_blocks, cb = within % col_blocks;
      w.seek(b);
      const std::int64_t r0 = rb * block_rows, c0 = cb * block_cols;
      tile_fn(dst + w.dst + r0 * D + c0, src + w.src + c0 * S + r0, std::min(block_rows, rows - r0),
              std::min(block_cols, cols - c0), S, D);
    }
    _mm_sfence();
  });
}

template <class T>
void tile_scalar(T* dst, const T* src, std::int64_t rows, std::int64_t cols, std::int64_t S, std::int64_t D) {
  for (std::int64_t c = 0; c < cols; ++c)
    for (std::int64_t r = 0; r < rows; ++r) dst[r * D + c] = src[c * S + r];
}

// blocked's tiles: 128 bytes' worth of elements square, 16 at least (an L1-resident buffer of
// 16 KiB at most).
template <class T>
constexpr std::int64_t kBlockedSide = std::max<std::int64_t>(16, 128 / std::int64_t(sizeof(T)));

// A tile through an L1 buffer: src rows in whole, then dst rows out whole, so that every line is
// read or written once even where both row pitches are powers of two (whose lines all fall in one
// L1 set: a tile walked in place evicts its own lines before it is done with them).
template <class T>
void tile_buffered(T* dst, const T* src, std::int64_t rows, std::int64_t cols, std::int64_t S, std::int64_t D) {
  alignas(64) T buffer[kBlockedSide<T> * kBlockedSide<T>];
  for (std::int64_t c = 0; c < cols; ++c) std::memcpy(buffer + c * rows, src + c * S, std::size_t(rows) * sizeof(T));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) dst[r * D + c] = buffer[c * rows + r];
}

template <class T>
void gather_row(T* dst, const T* src, std::int64_t length, std::int64_t stride) {
  for (std::int64_t j = 0; j < length; ++j) dst[j] = src[j * stride];
}

// ---- blocked ----

template <class T>
void blocked_typed(const StridedPlan& plan, T* dst, const T* src) {
  switch (plan.kind) {
    case StridedPlan::Kind::rows:
      for_each_row(plan, dst, src, [](T* out, const T* in, std::int64_t n) { std::memcpy(out, in, std::size_t(n) * sizeof(T)); });
      return;
    case StridedPlan::Kind::transpose:
      for_each_tile(plan, dst, src, kBlockedSide<T>, kBlockedSide<T>, tile_buffered<T>);
      return;
    case StridedPlan::Kind::gather: {
      const std::int64_t stride = plan.src_strides[plan.dims - 1];
      for_each_row(plan, dst, src, [stride](T* out, const T* in, std::int64_t n) { gather_row(out, in, n, stride); });
      return;
    }
  }
}

void strided_blocked(const CopyProblem& p, Stream) {
  const StridedPlan plan = plan_strided_copy(p);
  if (plan.numel == 0) return;
  by_element_size(plan.element_size, [&](auto tag) {
    using T = decltype(tag);
    blocked_typed(plan, p.dst.ptr<T>(), p.src.ptr<const T>());
  });
}

// ---- simd: in-register transposes ----
//
// Each micro-kernel transposes a V x V tile: row i of the source (V elements at src + i * S) becomes
// column i of the destination (rows at dst + j * D); `nt` stores with non-temporal stores (the
// caller guarantees the alignment).

#define FLOPSCOPE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,bmi2")))
#define FLOPSCOPE_AVX2 __attribute__((target("avx2")))

// 16 x 16 4-byte elements transposed into registers: r[j] is column j of the 16 src rows.
FLOPSCOPE_AVX512 inline void transpose16x16_4byte_regs(const std::uint32_t* src, std::int64_t S, __m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * S);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);  // per 128-bit lane: a0 b0 a1 b1
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);  // a2 b2 a3 b3
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);  // a0 b0 c0 d0
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);  // a1 b1 c1 d1
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);  // a2 ..
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);  // a3 ..
  }
  // r[4g + k]: column k (lane 0), k + 4, k + 8, k + 12 (lanes 1-3) of rows 4g..4g+3.
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x88);       // columns k, k+8 of rows 0-7
    t[4 + k] = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xdd);   // columns k+4, k+12 of rows 0-7
    t[8 + k] = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0x88);
    t[12 + k] = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0xdd);
  }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_i32x4(t[k], t[8 + k], 0x88);      // column k
    r[8 + k] = _mm512_shuffle_i32x4(t[k], t[8 + k], 0xdd);  // column k + 8
  }
}

FLOPSCOPE_AVX512 void transpose16x16_4byte_avx512(const std::uint32_t* src, std::int64_t S, std::uint32_t* dst,
                                                  std::int64_t D, bool nt) {
  __m512i r[16];
  transpose16x16_4byte_regs(src, S, r);
  if (nt)
    for (int j = 0; j < 16; ++j) _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + j * D), r[j]);
  else
    for (int j = 0; j < 16; ++j) _mm512_storeu_si512(dst + j * D, r[j]);
}

// Note [columns]: past the caches, a transpose whose micro-tiles read 32 src rows side by side
// reads twice the streams that the prefetchers follow: Zen 4, a throwaway program, one thread,
// f32 8192^2: 16 x 16 tiles (16 rows) 18.5 GB/s, the same tiles in pairs across 32 rows 10.5. And
// its dst lines go out one a row, rows apart. A column of tiles 32 src rows wide (32 bf16
// columns, a line of each dst row; 32 f32, two lines) goes instead in two passes of 16 src rows,
// each reading whole lines along them: the first leaves its part of every dst row (bf16: the
// first half-line; f32: the first line) in a buffer of kColumnStageBytes, the second adds the
// rest and streams the row's part whole. In that program, 8192^2, same process, 6 runs each:
// - bf16: one thread 15.0-15.4 GB/s as 32 x 32 tiles, 17.1-17.3 in passes; two threads 29.8-31.3
//   and 31.4-33.3. The tiles asked for their src rows 64 elements ahead (software prefetch,
//   0.49-0.52x of a copy -> 0.56-0.60x); the passes do not need it (one thread, with it: 16.8-16.9).
// - f32: one thread 18.6-18.7 GB/s as 16 x 16 tiles, 21.2-21.9 in passes of 1024 dst rows (2048:
//   20.1-20.6; four passes, four lines a row: 19.7-20.2); two threads 30.2-37.1 and 36.7-42.7.
//   bench_strided's f32 8192^2, the binaries before and after alternated: one thread 16.7/17.5 ->
//   19.7/19.9 GB/s; two threads gain where the memory leaves room (beside a copy at 60-63 GB/s,
//   34.3/34.8 -> 37.0), not beside one at 46-48 (33.6 -> 33.4/33.8).
// - AVX2 (8 x 8 f32 and 16 x 16 bf16 tiles, rows of half a line): the columns are two tiles wide
//   and stream each line as two halves, where strips of an L1 buffer went before. On this Zen 4
//   with FLOPSCOPE_MAX_ISA=avx2 (a stand-in: no AVX2-only CPU here), bench_strided, binaries
//   alternated, one thread: f32 8192^2 14.9/15.5 -> 18.2/18.0 GB/s, 4096^2 14.8/15.0 ->
//   19.3/18.9, bf16 8192^2 14.3/14.6 -> 16.3/16.1; two threads f32 8192^2 30.6/30.8/30.5 ->
//   34.2/34.2/32.8, 4096^2 27.2/30.9/29.2 -> 35.6/35.5/36.7, bf16 27.0/29.7/27.6 -> 32.3/30.2/29.2.
// - f64 (8 x 8 tiles, 4 x 4 on AVX2), columns of 16 and 8 src rows: bench_strided --dtypes=f64
//   --views=transpose --matrices=8192x4096, binaries alternated: one thread 19.6/19.3/19.7 ->
//   22.7/23.2/22.8 GB/s; two threads 39.1/38.5/38.0 -> 43.7/38.6/37.7; AVX2 (as above), two
//   threads 24.5/24.8/24.8 -> 34.9/33.9/34.3.
constexpr std::int64_t kColumnStageBytes = 64 << 10;

// 8 x 8 8-byte elements transposed into registers: t[j] is column j of the 8 src rows.
FLOPSCOPE_AVX512 inline void transpose8x8_8byte_regs(const std::uint64_t* src, std::int64_t S, __m512i (&t)[8]) {
  __m512i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_si512(src + i * S);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm512_unpacklo_epi64(r[i], r[i + 1]);      // per lane: a0 b0 | a2 b2 | a4 b4 | a6 b6
    t[i + 1] = _mm512_unpackhi_epi64(r[i], r[i + 1]);  // a1 b1 | a3 b3 | ...
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[i + 2], 0x88);      // a0b0 a4b4 c0d0 c4d4
    r[i + 1] = _mm512_shuffle_i32x4(t[i + 1], t[i + 3], 0x88);  // columns 1, 5
    r[i + 2] = _mm512_shuffle_i32x4(t[i], t[i + 2], 0xdd);      // columns 2, 6
    r[i + 3] = _mm512_shuffle_i32x4(t[i + 1], t[i + 3], 0xdd);  // columns 3, 7
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x88);      // column k
    t[4 + k] = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xdd);  // column k + 4
  }
}

FLOPSCOPE_AVX512 void transpose8x8_8byte_avx512(const std::uint64_t* src, std::int64_t S, std::uint64_t* dst,
                                                std::int64_t D, bool nt) {
  __m512i t[8];
  transpose8x8_8byte_regs(src, S, t);
  if (nt)
    for (int j = 0; j < 8; ++j) _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + j * D), t[j]);
  else
    for (int j = 0; j < 8; ++j) _mm512_storeu_si512(dst + j * D, t[j]);
}

// A column of V x V tiles of one line a row (AVX-512: 16 x 16 4-byte, 8 x 8 8-byte elements), two
// wide, streamed (Note [columns]): 2V src rows x `rows` columns (a multiple of V, at most
// kColumnStageBytes / 64) into `rows` dst rows of two lines.
template <class T, int V, void (*regs)(const T*, std::int64_t, __m512i (&)[V])>
FLOPSCOPE_AVX512 void transpose_column_avx512(const T* src, std::int64_t S, T* dst, std::int64_t D, std::int64_t rows) {
  alignas(64) __m512i first[kColumnStageBytes / 64];  // dst row j's first line
  __m512i r[V];
  for (std::int64_t at = 0; at < rows; at += V) {
    regs(src + at, S, r);
    for (int j = 0; j < V; ++j) first[at + j] = r[j];
  }
  for (std::int64_t at = 0; at < rows; at += V) {
    regs(src + V * S + at, S, r);
    T* out = dst + at * D;
    for (int j = 0; j < V; ++j) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + j * D), first[at + j]);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + j * D + V), r[j]);
    }
  }
}

// 16 rows of 2-byte elements, zmm i row i (8 columns in each 128-bit lane), transposed within
// lanes by three rounds of unpacks: lane L of t[k] is column k of lane L's 8, down rows 0-7; of
// t[8 + k], down rows 8-15.
FLOPSCOPE_AVX512 inline void unpack16_2byte(__m512i (&r)[16], __m512i (&t)[16]) {
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi16(r[i], r[i + 1]);      // per lane: columns 0-3 of 2 rows
    t[i + 1] = _mm512_unpackhi_epi16(r[i], r[i + 1]);  // 4-7
  }
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm512_unpacklo_epi32(t[g], t[g + 2]);          // columns 0, 1 of 4 rows
    r[g + 1] = _mm512_unpackhi_epi32(t[g], t[g + 2]);      // 2, 3
    r[g + 2] = _mm512_unpacklo_epi32(t[g + 1], t[g + 3]);  // 4, 5
    r[g + 3] = _mm512_unpackhi_epi32(t[g + 1], t[g + 3]);  // 6, 7
  }
  for (int h = 0; h < 16; h += 8)
    for (int q = 0; q < 4; ++q) {
      t[h + 2 * q] = _mm512_unpacklo_epi64(r[h + q], r[h + 4 + q]);      // column 2q of 8 rows
      t[h + 2 * q + 1] = _mm512_unpackhi_epi64(r[h + q], r[h + 4 + q]);  // 2q + 1
    }
}

// 32 x 32 2-byte elements, 16 dst rows at a time: zmm i holds src row i's 16 columns in its low
// half and src row 16 + i's in its high half, so that three rounds of unpacks within 128-bit
// lanes and one permute of 64-bit pairs across them transpose both 16 x 16 blocks at once, and
// dst row j comes out whole in zmm j: one line, streamed straight from the register like 4-byte
// elements' rows. 16 zmm a round stay in registers. Zen 4, one tile in L1 over and over (runtime
// strides): 39 ns a tile, against 71 ns for a transpose of all 32 rows at once (five rounds of
// 160 zmm shuffles, with half of its 64 values spilled to the stack).
FLOPSCOPE_AVX512 void transpose32x32_2byte_avx512(const std::uint16_t* src, std::int64_t S, std::uint16_t* dst,
                                                  std::int64_t D, bool nt) {
  // The 64-bit elements of t[k] (0-7) and t[8 + k] (8-15) that make dst rows k and 8 + k.
  const __m512i rows_k = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), rows_8k = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  for (int half = 0; half < 2; ++half) {
    const std::uint16_t* from = src + 16 * half;  // dst rows 16·half + j
    __m512i r[16], t[16];
    for (int i = 0; i < 16; ++i)
      r[i] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i * S))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + (16 + i) * S)), 1);
    // t[k]'s lanes: column k and k + 8 of rows 0-7, then of rows 16-23 (t[8 + k]: 8-15, 24-31).
    unpack16_2byte(r, t);
    for (int k = 0; k < 8; ++k) {
      r[k] = _mm512_permutex2var_epi64(t[k], rows_k, t[8 + k]);
      r[8 + k] = _mm512_permutex2var_epi64(t[k], rows_8k, t[8 + k]);
    }
    for (int j = 0; j < 16; ++j) {
      auto* out = reinterpret_cast<__m512i*>(dst + (16 * half + j) * D);
      if (nt)
        _mm512_stream_si512(out, r[j]);
      else
        _mm512_storeu_si512(out, r[j]);
    }
  }
}

// 16 src rows x 32 2-byte columns, transposed: r[k] holds dst rows k and k + 8 (16 elements each,
// the low and high halves), r[8 + k] dst rows k + 16 and k + 24 (k < 8).
FLOPSCOPE_AVX512 inline void transpose16x32_2byte_regs(const std::uint16_t* src, std::int64_t S, __m512i (&r)[16]) {
  // From t[k] and t[8 + k]: lanes a then b make dst rows k and k + 8, lanes c then d k + 16 and k + 24.
  const __m512i rows_k = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), rows_16k = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
  __m512i t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * S);
  unpack16_2byte(r, t);
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_permutex2var_epi64(t[k], rows_k, t[8 + k]);
    r[8 + k] = _mm512_permutex2var_epi64(t[k], rows_16k, t[8 + k]);
  }
}

// A column of 32 x 32 2-byte tiles, streamed (Note [columns]): 32 src rows x `rows` columns (a
// multiple of 32, at most kColumnStageBytes / 32) into `rows` dst rows of one line each.
FLOPSCOPE_AVX512 void transpose_column32_2byte_avx512(const std::uint16_t* src, std::int64_t S, std::uint16_t* dst,
                                                      std::int64_t D, std::int64_t rows) {
  alignas(64) __m512i first[kColumnStageBytes / 64];  // the first pass's r[0..15] per 32 dst rows
  __m512i r[16];
  for (std::int64_t at = 0; at < rows; at += 32) {
    transpose16x32_2byte_regs(src + at, S, r);
    for (int k = 0; k < 16; ++k) first[at / 2 + k] = r[k];
  }
  for (std::int64_t at = 0; at < rows; at += 32) {
    transpose16x32_2byte_regs(src + 16 * S + at, S, r);
    const __m512i* half = first + at / 2;
    std::uint16_t* out = dst + at * D;
    for (int k = 0; k < 16; ++k) {  // dst rows j and j + 8, each [the first pass's half | this one's]
      const std::int64_t j = k < 8 ? k : k + 8;
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + j * D), _mm512_shuffle_i64x2(half[k], r[k], 0x44));
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + (j + 8) * D), _mm512_shuffle_i64x2(half[k], r[k], 0xee));
    }
  }
}

// 8 x 8 4-byte elements transposed into registers: t[j] is column j of the 8 src rows.
FLOPSCOPE_AVX2 inline void transpose8x8_4byte_avx2_regs(const std::uint32_t* src, std::int64_t S, __m256i (&t)[8]) {
  __m256i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * S));
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);          // columns 0 | 4 of 4 rows
    r[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);      // 1 | 5
    r[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);  // 2 | 6
    r[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);  // 3 | 7
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm256_permute2x128_si256(r[k], r[4 + k], 0x20);
    t[4 + k] = _mm256_permute2x128_si256(r[k], r[4 + k], 0x31);
  }
}

FLOPSCOPE_AVX2 void transpose8x8_4byte_avx2(const std::uint32_t* src, std::int64_t S, std::uint32_t* dst,
                                            std::int64_t D, bool nt) {
  __m256i t[8];
  transpose8x8_4byte_avx2_regs(src, S, t);
  for (int j = 0; j < 8; ++j) {
    auto* out = reinterpret_cast<__m256i*>(dst + j * D);
    if (nt) _mm256_stream_si256(out, t[j]);
    else _mm256_storeu_si256(out, t[j]);
  }
}

// 4 x 4 8-byte elements transposed into registers: r[j] is column j of the 4 src rows.
FLOPSCOPE_AVX2 inline void transpose4x4_8byte_avx2_regs(const std::uint64_t* src, std::int64_t S, __m256i (&r)[4]) {
  __m256i t[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * S));
  t[0] = _mm256_unpacklo_epi64(r[0], r[1]);  // a0 b0 | a2 b2
  t[1] = _mm256_unpackhi_epi64(r[0], r[1]);  // a1 b1 | a3 b3
  t[2] = _mm256_unpacklo_epi64(r[2], r[3]);
  t[3] = _mm256_unpackhi_epi64(r[2], r[3]);
  r[0] = _mm256_permute2x128_si256(t[0], t[2], 0x20);
  r[1] = _mm256_permute2x128_si256(t[1], t[3], 0x20);
  r[2] = _mm256_permute2x128_si256(t[0], t[2], 0x31);
  r[3] = _mm256_permute2x128_si256(t[1], t[3], 0x31);
}

FLOPSCOPE_AVX2 void transpose4x4_8byte_avx2(const std::uint64_t* src, std::int64_t S, std::uint64_t* dst,
                                            std::int64_t D, bool nt) {
  __m256i r[4];
  transpose4x4_8byte_avx2_regs(src, S, r);
  for (int j = 0; j < 4; ++j) {
    auto* out = reinterpret_cast<__m256i*>(dst + j * D);
    if (nt) _mm256_stream_si256(out, r[j]);
    else _mm256_storeu_si256(out, r[j]);
  }
}

// 16 x 16 2-byte elements in ymm (AVX2; AVX-512 runs two of these a zmm: transpose32x32_2byte_avx512).
// 16 x 16 2-byte elements transposed into registers: r[j] is column j of the 16 src rows.
FLOPSCOPE_AVX2 inline void transpose16x16_2byte_avx2_regs(const std::uint16_t* src, std::int64_t S, __m256i (&r)[16]) {
  __m256i t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * S));
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm256_unpacklo_epi16(r[i], r[i + 1]);      // columns 0-3 | 8-11 of 2 rows
    t[i + 1] = _mm256_unpackhi_epi16(r[i], r[i + 1]);  // 4-7 | 12-15
  }
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm256_unpacklo_epi32(t[g], t[g + 2]);          // columns 0,1 | 8,9 of 4 rows
    r[g + 1] = _mm256_unpackhi_epi32(t[g], t[g + 2]);      // 2,3 | 10,11
    r[g + 2] = _mm256_unpacklo_epi32(t[g + 1], t[g + 3]);  // 4,5 | 12,13
    r[g + 3] = _mm256_unpackhi_epi32(t[g + 1], t[g + 3]);  // 6,7 | 14,15
  }
  for (int h = 0; h < 16; h += 8)
    for (int q = 0; q < 4; ++q) {
      t[h + 2 * q] = _mm256_unpacklo_epi64(r[h + q], r[h + 4 + q]);      // column 2q | 2q+8 of 8 rows
      t[h + 2 * q + 1] = _mm256_unpackhi_epi64(r[h + q], r[h + 4 + q]);  // 2q+1 | 2q+9
    }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm256_permute2x128_si256(t[k], t[8 + k], 0x20);
    r[8 + k] = _mm256_permute2x128_si256(t[k], t[8 + k], 0x31);
  }
}

FLOPSCOPE_AVX2 void transpose16x16_2byte_avx2(const std::uint16_t* src, std::int64_t S, std::uint16_t* dst,
                                              std::int64_t D, bool nt) {
  __m256i r[16];
  transpose16x16_2byte_avx2_regs(src, S, r);
  for (int j = 0; j < 16; ++j) {
    auto* out = reinterpret_cast<__m256i*>(dst + j * D);
    if (nt) _mm256_stream_si256(out, r[j]);
    else _mm256_storeu_si256(out, r[j]);
  }
}

// A column of V x V tiles of 32-byte rows (AVX2), two wide, streamed (Note [columns]): 2V src
// rows x `rows` columns (a multiple of V, at most kColumnStageBytes / 32) into `rows` dst rows of
// one line each, its halves by two streaming stores. transpose_column_avx512's twin for ymm: a
// function's target ISA cannot be a template argument, and one body built for AVX-512 could use
// instructions that an AVX2-only CPU lacks.
template <class T, int V, void (*regs)(const T*, std::int64_t, __m256i (&)[V])>
FLOPSCOPE_AVX2 void transpose_column_avx2(const T* src, std::int64_t S, T* dst, std::int64_t D, std::int64_t rows) {
  alignas(32) __m256i first[kColumnStageBytes / 32];  // dst row j's first half-line
  __m256i r[V];
  for (std::int64_t at = 0; at < rows; at += V) {
    regs(src + at, S, r);
    for (int j = 0; j < V; ++j) first[at + j] = r[j];
  }
  for (std::int64_t at = 0; at < rows; at += V) {
    regs(src + V * S + at, S, r);
    T* out = dst + at * D;
    for (int j = 0; j < V; ++j) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + j * D), first[at + j]);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + j * D + V), r[j]);
    }
  }
}

FLOPSCOPE_AVX2 void transpose16x16_1byte_avx2(const std::uint8_t* src, std::int64_t S, std::uint8_t* dst,
                                              std::int64_t D, bool nt) {
  __m128i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * S));
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm_unpacklo_epi8(r[i], r[i + 1]);      // columns 0-7 of 2 rows
    t[i + 1] = _mm_unpackhi_epi8(r[i], r[i + 1]);  // 8-15
  }
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm_unpacklo_epi16(t[g], t[g + 2]);          // columns 0-3 of 4 rows
    r[g + 1] = _mm_unpackhi_epi16(t[g], t[g + 2]);      // 4-7
    r[g + 2] = _mm_unpacklo_epi16(t[g + 1], t[g + 3]);  // 8-11
    r[g + 3] = _mm_unpackhi_epi16(t[g + 1], t[g + 3]);  // 12-15
  }
  for (int h = 0; h < 16; h += 8)
    for (int q = 0; q < 4; ++q) {
      t[h + 2 * q] = _mm_unpacklo_epi32(r[h + q], r[h + 4 + q]);      // columns 4q, 4q+1 of 8 rows
      t[h + 2 * q + 1] = _mm_unpackhi_epi32(r[h + q], r[h + 4 + q]);  // 4q+2, 4q+3
    }
  for (int m = 0; m < 8; ++m) {
    r[2 * m] = _mm_unpacklo_epi64(t[m], t[8 + m]);
    r[2 * m + 1] = _mm_unpackhi_epi64(t[m], t[8 + m]);
  }
  for (int j = 0; j < 16; ++j) {
    auto* out = reinterpret_cast<__m128i*>(dst + j * D);
    if (nt) _mm_stream_si128(out, r[j]);
    else _mm_storeu_si128(out, r[j]);
  }
}

// Row copies: vector loads and stores, non-temporal ones on the aligned body when `nt`.
FLOPSCOPE_AVX512 void copy_row_avx512(unsigned char* out, const unsigned char* in, std::size_t bytes, bool nt) {
  std::size_t i = 0;
  if (nt) {
    const std::size_t head = std::min(bytes, (64 - (reinterpret_cast<std::uintptr_t>(out) & 63)) & 63);
    if (head) {
      const __mmask64 mask = _bzhi_u64(~std::uint64_t{0}, static_cast<unsigned>(head));
      _mm512_mask_storeu_epi8(out, mask, _mm512_maskz_loadu_epi8(mask, in));
    }
    for (i = head; i + 64 <= bytes; i += 64)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i), _mm512_loadu_si512(in + i));
  } else {
    for (; i + 64 <= bytes; i += 64) _mm512_storeu_si512(out + i, _mm512_loadu_si512(in + i));
  }
  if (i < bytes) {
    const __mmask64 mask = _bzhi_u64(~std::uint64_t{0}, static_cast<unsigned>(bytes - i));
    _mm512_mask_storeu_epi8(out + i, mask, _mm512_maskz_loadu_epi8(mask, in + i));
  }
}

FLOPSCOPE_AVX2 void copy_row_avx2(unsigned char* out, const unsigned char* in, std::size_t bytes, bool nt) {
  std::size_t i = 0;
  if (nt) {
    const std::size_t head = std::min(bytes, (32 - (reinterpret_cast<std::uintptr_t>(out) & 31)) & 31);
    std::memcpy(out, in, head);
    for (i = head; i + 32 <= bytes; i += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
  } else {
    for (; i + 32 <= bytes; i += 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
  }
  std::memcpy(out + i, in + i, bytes - i);
}

// Slice rows (x[:, ::k]) at steps the shuffle below does not take, past the last-level cache: each
// vector of dst gathered element by element into an aligned buffer and written with a
// non-temporal store (x[:, ::32] of a 4096^2 f32 matrix: 1.4x oneDNN's reorder on Zen 4, against
// 0.86x with ordinary stores). Below it, and where `nt` is off, element by element straight into
// dst: the buffer's store-to-load round trip then costs more than it saves, and Zen 4's vpgatherdd
// is slower still (8 GB/s at k = 2 against 21 for the plain loop).
template <class T>
FLOPSCOPE_AVX512 void gather_row_avx512(T* dst, const T* src, std::int64_t n, std::int64_t stride, bool nt) {
  constexpr std::int64_t lanes = 64 / std::int64_t(sizeof(T));
  std::int64_t j = 0;
  if (nt) {
    for (; j < n && (reinterpret_cast<std::uintptr_t>(dst + j) & 63); ++j) dst[j] = src[j * stride];
    for (; j + lanes <= n; j += lanes) {
      alignas(64) T lane[lanes];
      for (std::int64_t l = 0; l < lanes; ++l) lane[l] = src[(j + l) * stride];
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + j), _mm512_load_si512(lane));
    }
  }
  for (; j < n; ++j) dst[j] = src[j * stride];
}

// Slice rows at a step k of 2 to 16 with AVX-512, while k elements span at most one vector (f64 to
// k = 8): each dst vector's k source vectors loaded whole (every line of them is read anyway) and
// merged by k - 1 two-source permutes (vpermt2w/d/q), each taking the lanes that the next source
// vector holds; the row's last vector by masked loads and a masked store, so that nothing past the
// row's last element is read. Measured on Zen 4 (2 threads, 4096 x 4096 f32, against oneDNN's
// reorder in the same process, 4 runs, with streaming stores since src's lines and dst together
// exceed the LLC): k = 2 1.23-1.30x, k = 4 1.17-1.20x, k = 8 1.07-1.21x, k = 16 1.20-1.29x. Element
// by element with streaming stores, k = 8 and 16 ran at 0.71-0.76x and 0.58-0.62x; with the chain
// of permutes but ordinary stores (the footprint once counted dst twice, not src's lines), k = 4
// at 0.84-0.99x.
constexpr std::int64_t kMaxShuffleStep = 16;

struct SliceShuffle {
  std::int64_t step = 0;                 // 2..kMaxShuffleStep, or 0: no shuffle (gather_row instead)
  __m512i index[kMaxShuffleStep - 1];  // index[j - 1] merges source vector j
};

template <class T>
SliceShuffle slice_shuffle(std::int64_t step) {
  constexpr std::int64_t lanes = 64 / std::int64_t(sizeof(T));
  SliceShuffle s;
  if (step < 2 || step > kMaxShuffleStep || step * std::int64_t(sizeof(T)) > 64) return s;
  s.step = step;
  for (std::int64_t j = 1; j < step; ++j) {
    alignas(64) T index[lanes];
    for (std::int64_t l = 0; l < lanes; ++l) {
      const std::int64_t at = l * step;  // the element lane l wants, from the first source vector's start
      // j = 1 takes vectors 0 and 1 as they are; later ones keep what is gathered so far.
      if (j == 1) index[l] = T(at < 2 * lanes ? at : l);
      else index[l] = T(at >= j * lanes && at < (j + 1) * lanes ? lanes + at - j * lanes : l);
    }
    std::memcpy(&s.index[j - 1], index, 64);
  }
  return s;
}

template <class T>
FLOPSCOPE_AVX512 __m512i permute2(__m512i a, __m512i index, __m512i b) {
  if constexpr (sizeof(T) == 2) return _mm512_permutex2var_epi16(a, index, b);
  else if constexpr (sizeof(T) == 4) return _mm512_permutex2var_epi32(a, index, b);
  else return _mm512_permutex2var_epi64(a, index, b);
}

FLOPSCOPE_AVX512 __mmask64 byte_mask(std::int64_t bytes) {
  return bytes >= 64 ? ~__mmask64{0} : bytes <= 0 ? 0 : _bzhi_u64(~std::uint64_t{0}, unsigned(bytes));
}

template <class T>
FLOPSCOPE_AVX512 void slice_row_avx512(T* dst, const T* src, std::int64_t n, const SliceShuffle& s, bool nt) {
  constexpr std::int64_t lanes = 64 / std::int64_t(sizeof(T)), size = std::int64_t(sizeof(T));
  const std::int64_t k = s.step;
  std::int64_t j = 0;
  if (nt)
    for (; j < n && (reinterpret_cast<std::uintptr_t>(dst + j) & 63); ++j) dst[j] = src[j * k];
  // Whole vectors while their k source vectors end before the row's last element ((n - 1) k).
  for (; j + lanes <= n - 1; j += lanes) {
    const T* from = src + j * k;
    __m512i out = permute2<T>(_mm512_loadu_si512(from), s.index[0], _mm512_loadu_si512(from + lanes));
    for (std::int64_t v = 2; v < k; ++v) out = permute2<T>(out, s.index[v - 1], _mm512_loadu_si512(from + v * lanes));
    if (nt) _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + j), out);
    else _mm512_storeu_si512(dst + j, out);
  }
  if (j < n) {  // n - j <= lanes outputs, elements up to (n - 1 - j) k of `from`
    const T* from = src + j * k;
    const std::int64_t elements = (n - 1 - j) * k + 1;
    __m512i out = permute2<T>(_mm512_maskz_loadu_epi8(byte_mask(elements * size), from), s.index[0],
                              _mm512_maskz_loadu_epi8(byte_mask((elements - lanes) * size), from + lanes));
    for (std::int64_t v = 2; v < k; ++v)
      out = permute2<T>(out, s.index[v - 1], _mm512_maskz_loadu_epi8(byte_mask((elements - v * lanes) * size), from + v * lanes));
    _mm512_mask_storeu_epi8(dst + j, byte_mask((n - j) * size), out);
  }
}

template <class T>
FLOPSCOPE_AVX2 void gather_row_avx2(T* dst, const T* src, std::int64_t n, std::int64_t stride, bool nt) {
  constexpr std::int64_t lanes = 32 / std::int64_t(sizeof(T));
  std::int64_t j = 0;
  if (nt) {
    for (; j < n && (reinterpret_cast<std::uintptr_t>(dst + j) & 31); ++j) dst[j] = src[j * stride];
    for (; j + lanes <= n; j += lanes) {
      alignas(32) T lane[lanes];
      for (std::int64_t l = 0; l < lanes; ++l) lane[l] = src[(j + l) * stride];
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + j), _mm256_load_si256(reinterpret_cast<const __m256i*>(lane)));
    }
  }
  for (; j < n; ++j) dst[j] = src[j * stride];
}

// One element repeated: an expanded column (gather of stride 0).
template <class T>
void fill_row(T* out, T value, std::int64_t n) {
  std::fill_n(out, n, value);
}

// The in-register micro-kernel of an element type on this CPU, its tile side, and the row copy.
template <class T>
struct SimdKernels {
  void (*transpose)(const T*, std::int64_t, T*, std::int64_t, bool) = nullptr;
  std::int64_t side = 0;
  void (*copy_row)(unsigned char*, const unsigned char*, std::size_t, bool) = nullptr;
  void (*gather_row)(T*, const T*, std::int64_t, std::int64_t, bool) = nullptr;  // 4- and 8-byte elements
  // Streamed transposes in columns (Note [columns]): column(src, S, dst, D, rows) moves
  // column_side src rows x `rows` columns (a multiple of side, as many as its first pass's
  // half of each dst row's part fits kColumnStageBytes: column_rows()).
  void (*column)(const T*, std::int64_t, T*, std::int64_t, std::int64_t) = nullptr;
  std::int64_t column_side = 0;
  std::int64_t column_rows() const {
    return column_side > 0 ? kColumnStageBytes / (column_side * std::int64_t(sizeof(T)) / 2) : 0;
  }
};

template <class T>
SimdKernels<T> simd_kernels() {
  const bool avx512 = vector_isa() == VectorIsa::avx512;
  const bool avx2 = vector_isa() != VectorIsa::scalar;
  SimdKernels<T> k;
  k.copy_row = avx512 ? copy_row_avx512 : avx2 ? copy_row_avx2 : nullptr;
  if constexpr (sizeof(T) == 4) {
    if (avx512)
      k = {transpose16x16_4byte_avx512, 16, k.copy_row, nullptr,
           transpose_column_avx512<std::uint32_t, 16, transpose16x16_4byte_regs>, 32};
    else if (avx2)
      k = {transpose8x8_4byte_avx2, 8, k.copy_row, nullptr,
           transpose_column_avx2<std::uint32_t, 8, transpose8x8_4byte_avx2_regs>, 16};
  } else if constexpr (sizeof(T) == 8) {
    if (avx512)
      k = {transpose8x8_8byte_avx512, 8, k.copy_row, nullptr,
           transpose_column_avx512<std::uint64_t, 8, transpose8x8_8byte_regs>, 16};
    else if (avx2)
      k = {transpose4x4_8byte_avx2, 4, k.copy_row, nullptr,
           transpose_column_avx2<std::uint64_t, 4, transpose4x4_8byte_avx2_regs>, 8};
  } else if constexpr (sizeof(T) == 2) {
    if (avx512)
      k = {transpose32x32_2byte_avx512, 32, k.copy_row, nullptr, transpose_column32_2byte_avx512, 32};
    else if (avx2)
      k = {transpose16x16_2byte_avx2, 16, k.copy_row, nullptr,
           transpose_column_avx2<std::uint16_t, 16, transpose16x16_2byte_avx2_regs>, 32};
  } else {
    if (avx2) k = {transpose16x16_1byte_avx2, 16, k.copy_row};
  }
  if constexpr (sizeof(T) >= 4) k.gather_row = avx512 ? gather_row_avx512<T> : avx2 ? gather_row_avx2<T> : nullptr;
  return k;
}

// The ragged edges of a transpose (fewer than V rows or columns, any pitch) by the same micro-kernel:
// each partial V x V tile's src rows copied into an L1 buffer (vector copies, masked at the end
// with AVX-512), transposed there and its dst rows copied out the same way. Element by element,
// 4095 x 4097's last 15 columns were 4097 scattered stores each.
template <class T>
void edge_tiles(const SimdKernels<T>& k, T* out, const T* in, std::int64_t rows, std::int64_t cols, std::int64_t S,
                std::int64_t D) {
  const std::int64_t V = k.side;
  alignas(64) T from[32 * 32], to[32 * 32];
  std::memset(from, 0, sizeof from);
  auto copy = [&](T* dst, const T* src, std::int64_t n) {
    k.copy_row(reinterpret_cast<unsigned char*>(dst), reinterpret_cast<const unsigned char*>(src), std::size_t(n) * sizeof(T), false);
  };
  for (std::int64_t r = 0; r < rows; r += V)
    for (std::int64_t c = 0; c < cols; c += V) {
      const std::int64_t h = std::min(V, rows - r), w = std::min(V, cols - c);
      for (std::int64_t i = 0; i < w; ++i) copy(from + i * V, in + (c + i) * S + r, h);
      k.transpose(from, V, to, V, false);
      for (std::int64_t j = 0; j < h; ++j) copy(out + (r + j) * D + c, to + j * V, w);
    }
}

// Where dst rows start off a line (a pitch of no whole lines: 4095 x 4097), 4-byte elements on
// AVX-512: every whole line of dst goes out by one aligned non-temporal store. A micro-tile
// (16 x 16) is transposed in registers; dst row i's line is the 16 elements that start lead[i]
// into [the previous micro-tile's row i | this one's] (one two-source permute; the previous rows
// kept in a buffer, 64 KiB). Src is read as in the aligned case: 16 src rows at a time, each
// along a band of kSkewRows dst rows (4 KiB of the src row, in order), so that the prefetchers
// follow 16 streams within pages. The pieces of lines at a band's row ends (shared with the next
// row) go out by masked ordinary stores: a line that took both kinds of store would be read from
// memory again. Zen 4, 4095 x 4097 f32, same process: 0.60-0.65x a copy (strips below: 0.30-0.37x;
// bands of 128-512 rows: 0.43-0.52x; the previous rows through memory instead of a permute, which
// stalls every load on the stores it spans: 0.42x).
constexpr std::int64_t kSkewRows = 1024;

FLOPSCOPE_AVX512 void skewed_tiles_avx512(const SimdKernels<std::uint32_t>& k, std::uint32_t* out, const std::uint32_t* in,
                                          std::int64_t rows, std::int64_t cols, std::int64_t S, std::int64_t D) {
  constexpr std::int64_t V = 16;
  const std::int64_t full_rows = std::min(rows, kSkewRows) / V * V, full_cols = cols / V * V;
  alignas(64) __m512i previous[kSkewRows];  // the last micro-tile's row of each dst row (64 KiB)
  std::int64_t lead[kSkewRows];  // elements before row i's first whole line
  for (std::int64_t i = 0; i < full_rows; ++i) lead[i] = std::int64_t(-reinterpret_cast<std::uintptr_t>(out + i * D) & 63) / 4;
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (std::int64_t c = 0; c < full_cols; c += V)
    for (std::int64_t r = 0; r < full_rows; r += V) {
      __m512i tile[16];
      transpose16x16_4byte_regs(in + c * S + r, S, tile);
      for (std::int64_t j = 0; j < V; ++j) {
        const std::int64_t i = r + j;
        std::uint32_t* row = out + i * D;
        if (c == 0) {
          _mm512_mask_storeu_epi32(row, __mmask16((1u << lead[i]) - 1), tile[j]);
        } else {
          const __m512i line = _mm512_permutex2var_epi32(previous[i], _mm512_add_epi32(iota, _mm512_set1_epi32(int(lead[i]))), tile[j]);
          _mm512_stream_si512(reinterpret_cast<__m512i*>(row + c - V + lead[i]), line);
        }
        previous[i] = tile[j];
      }
    }
  if (full_cols > 0)
    for (std::int64_t i = 0; i < full_rows; ++i)  // the last micro-tile's elements from lead[i] on
      _mm512_mask_storeu_epi32(out + i * D + full_cols - V, __mmask16(0xffffu << lead[i]), previous[i]);
  if (full_cols < cols) edge_tiles(k, out + full_cols, in + full_cols * S, full_rows, cols - full_cols, S, D);
  if (full_rows < rows) edge_tiles(k, out + full_rows * D, in + full_rows, rows - full_rows, cols, S, D);
}

// simd's transposes, in blocks of 4 KiB of src row x V src rows: each src row is read a page at
// a time, in order, and each dst row written a line at a time, in order. Where the dst has fewer
// rows than a block is long (a tall, skinny src), the block takes more src rows instead, so that
// dst rows are still written in runs of many lines: with one line per row per block, 65536 x 64
// f32's 64 dst rows, 256 KiB apart, fell in one L1 and L2 set (1.5-2.9x slower than now). Within a
// block, V dst rows at a time, each left to right.
//
// Micro-tiles go straight to dst where a micro-tile row is one whole line of dst (V elements of
// 64 bytes, a row pitch of whole lines) or where the stores stay in cache; past the L2 caches, in
// blocks of a page of dst rows, in columns (Note [columns]: on AVX2 too, whose micro-tile rows are
// half a line, two micro-tiles make a column's line). Otherwise (1-byte elements, and 2- and
// 4-byte ones on AVX2 in shorter blocks, whose micro-tile rows are part of a line) past the
// last-level cache, on a row pitch of whole lines, a strip of V dst rows x kStripBytes goes through
// an L1 buffer and out a row at a time, whole lines by non-temporal stores and the partial lines
// at the ends by masked ones: non-temporal stores of part of a line, or of a line split across
// two, each cost a read of the line from memory (bf16 8192^2: 0.29x a copy direct, 0.79x in strips
// of 256 bytes, 0.41x in strips of 512).
// Where the pitch is no whole lines (4095 x 4097), the same for 1-, 2- and 8-byte elements and on
// AVX2: NT stores on the whole lines of each strip row, ordinary ones on the two lines it shares
// with its neighbours; 4-byte elements on AVX-512 by skewed_tiles_avx512 instead.
constexpr std::int64_t kStripBytes = 256, kStripBufferBytes = 32 << 10;


template <class T>
void simd_transpose(const SimdKernels<T>& k, const StridedPlan& plan, T* dst, const T* src, bool nt) {
  const std::int64_t V = k.side, rows = plan.sizes[plan.pivot];
  const std::int64_t pitch_bytes = plan.dst_strides[plan.pivot] * std::int64_t(sizeof(T));
  // Every micro-tile row starts on a line of dst where V elements fill one and every dst stride
  // but the innermost (the pitch, and a batch's: a 3-d permute's) is whole lines.
  bool lines_apart = true;
  for (int d = 0; d < plan.dims - 1; ++d) lines_apart &= plan.dst_strides[d] * std::int64_t(sizeof(T)) % 64 == 0;
  const bool whole_lines = lines_apart && V * std::int64_t(sizeof(T)) >= 64;
  const std::int64_t page = 4096 / std::int64_t(sizeof(T));
  std::int64_t block_rows = std::min(page, ceil_div(rows, V) * V);
  // Where dst rows start off a line (4095 x 4097), each micro-tile row's store spans two lines,
  // finished by the next block along the row: blocks then as tall as keep their dst lines (two a
  // row) and src lines in L1 (this CPU's size), so that those lines are not written back and read
  // again.
  if (pitch_bytes % 64 != 0) {
    const auto l1 = std::int64_t(this_cpu().l1d_bytes ? this_cpu().l1d_bytes : 32 << 10);
    block_rows = std::clamp(l1 / (2 * 64 + V * std::int64_t(sizeof(T))) / V * V, V, block_rows);
  }
  if constexpr (std::is_same_v<T, std::uint32_t>) {
    if (nt && pitch_bytes % 64 != 0 && V == 16 && vector_isa() == VectorIsa::avx512) {
      // Bands of whole dst rows, at most kSkewRows each, as many as a multiple of the threads.
      const std::int64_t threads = std::max(1, omp_get_max_threads());
      const std::int64_t bands = ceil_div(ceil_div(rows, kSkewRows), threads) * threads;
      const std::int64_t band_rows = std::min(kSkewRows, ceil_div(ceil_div(rows, bands), V) * V);
      for_each_tile(plan, dst, src, band_rows, plan.sizes[plan.dims - 1],
                    [&](T* out, const T* in, std::int64_t n_rows, std::int64_t n_cols, std::int64_t S, std::int64_t D) {
                      skewed_tiles_avx512(k, out, in, n_rows, n_cols, S, D);
                    });
      return;
    }
  }
  // Columns (Note [columns]) where a column's part of each dst row is whole lines and each pass
  // reads a page of every src row: blocks of fewer dst rows (65536 x 64, a 4-d permute's rows of
  // 64) read runs too short for the prefetchers.
  const bool columns = nt && lines_apart && k.column && k.column_side * std::int64_t(sizeof(T)) % 64 == 0 &&
                       block_rows == page && page <= k.column_rows();
  if (!nt || whole_lines || columns) {
    const bool tile_nt = nt && whole_lines;  // micro-tiles' rows are lines of dst
    const std::int64_t block_cols = std::max(columns ? k.column_side : V, page / block_rows * V);
    for_each_tile(plan, dst, src, block_rows, block_cols, [&](T* out, const T* in, std::int64_t n_rows, std::int64_t n_cols,
                                                               std::int64_t S, std::int64_t D) {
      const std::int64_t full_rows = n_rows / V * V, full_cols = n_cols / V * V;
      std::int64_t c0 = 0;  // the columns before c0 went in columns
      if (columns)
        for (; c0 + k.column_side <= full_cols; c0 += k.column_side) k.column(in + c0 * S, S, out + c0, D, full_rows);
      for (std::int64_t r = 0; r < full_rows; r += V)
        for (std::int64_t c = c0; c < full_cols; c += V) k.transpose(in + c * S + r, S, out + r * D + c, D, tile_nt);
      if (full_cols < n_cols) edge_tiles(k, out + full_cols, in + full_cols * S, full_rows, n_cols - full_cols, S, D);
      if (full_rows < n_rows) edge_tiles(k, out + full_rows * D, in + full_rows, n_rows - full_rows, n_cols, S, D);
    });
    return;
  }
  // Strips of whole lines: 256 bytes where the pitch is (bf16 with V = 16, measured), else as wide as
  // half of L1 holds V rows of, so that few lines are split between two strips.
  const auto l1 = std::int64_t(this_cpu().l1d_bytes ? this_cpu().l1d_bytes : 32 << 10);
  const std::int64_t strip_bytes = pitch_bytes % 64 == 0 ? kStripBytes : std::max(kStripBytes, std::min(l1 / 2, kStripBufferBytes) / V / 64 * 64);
  const std::int64_t W = strip_bytes / std::int64_t(sizeof(T));  // dst columns of a strip
  const std::int64_t block_cols = std::max(W, ceil_div(page / block_rows * V, W) * W);
  for_each_tile(plan, dst, src, block_rows, block_cols, [&](T* out, const T* in, std::int64_t n_rows, std::int64_t n_cols,
                                                             std::int64_t S, std::int64_t D) {
    alignas(64) T strip[kStripBufferBytes / sizeof(T)];  // V rows of W
    for (std::int64_t r = 0; r < n_rows; r += V) {
      const std::int64_t h = std::min(V, n_rows - r);
      for (std::int64_t c0 = 0; c0 < n_cols; c0 += W) {
        const std::int64_t w = std::min(W, n_cols - c0), full = h == V ? w / V * V : 0;
        const T* from = in + c0 * S + r;
        for (std::int64_t c = 0; c < full; c += V) k.transpose(from + c * S, S, strip + c, W, false);
        for (std::int64_t c = full; c < w; ++c)
          for (std::int64_t i = 0; i < h; ++i) strip[i * W + c] = from[c * S + i];
        for (std::int64_t i = 0; i < h; ++i)
          k.copy_row(reinterpret_cast<unsigned char*>(out + (r + i) * D + c0),
                     reinterpret_cast<const unsigned char*>(strip + i * W), std::size_t(w) * sizeof(T), true);
      }
    }
  });
}

template <class T>
void simd_typed(const StridedPlan& plan, T* dst, const T* src) {
  static const SimdKernels<T> k = simd_kernels<T>();
  if (!k.copy_row) throw std::logic_error("strided simd: " + lacks_avx2().value_or("no AVX2"));
  const bool nt = streaming(plan) && (reinterpret_cast<std::uintptr_t>(dst) & 63) == 0;
  switch (plan.kind) {
    case StridedPlan::Kind::rows:
      for_each_row(plan, dst, src, [nt](T* out, const T* in, std::int64_t n) {
        k.copy_row(reinterpret_cast<unsigned char*>(out), reinterpret_cast<const unsigned char*>(in),
                   std::size_t(n) * sizeof(T), nt);
      });
      return;
    case StridedPlan::Kind::transpose:
      simd_transpose(k, plan, dst, src, streaming_transpose(plan) && (reinterpret_cast<std::uintptr_t>(dst) & 63) == 0);
      return;
    case StridedPlan::Kind::gather: {
      const std::int64_t stride = plan.src_strides[plan.dims - 1];
      if (stride == 0)
        for_each_row(plan, dst, src, [](T* out, const T* in, std::int64_t n) { fill_row(out, *in, n); });
      else if (const SliceShuffle shuffle = sizeof(T) > 1 && vector_isa() == VectorIsa::avx512 ? slice_shuffle<T>(stride) : SliceShuffle{};
               shuffle.step) {
        if constexpr (sizeof(T) > 1)
          for_each_row(plan, dst, src, [&shuffle, nt](T* out, const T* in, std::int64_t n) { slice_row_avx512(out, in, n, shuffle, nt); });
      } else if (k.gather_row) {
        // One element from each line, every line (x[:, ::16] of f32 on AVX2): streaming stores
        // lost there, 0.84-0.88x oneDNN's reorder against 1.15-1.23x with ordinary ones (Zen 4,
        // FLOPSCOPE_MAX_ISA=avx2, 3 runs alternated); at a step of 32 they won, 1.18-1.28x
        // against 0.87-0.98x, and at 4, 1.07-1.25x against 0.87-0.96x.
        const bool every_line = (stride == 64 / std::int64_t(sizeof(T)) || stride == -64 / std::int64_t(sizeof(T)));
        for_each_row(plan, dst, src, [stride, nt = nt && !every_line](T* out, const T* in, std::int64_t n) {
          k.gather_row(out, in, n, stride, nt);
        });
      } else {
        for_each_row(plan, dst, src, [stride](T* out, const T* in, std::int64_t n) { gather_row(out, in, n, stride); });
      }
      return;
    }
  }
}

void strided_simd(const CopyProblem& p, Stream) {
  const StridedPlan plan = plan_strided_copy(p);
  if (plan.numel == 0) return;
  by_element_size(plan.element_size, [&](auto tag) {
    using T = decltype(tag);
    simd_typed(plan, p.dst.ptr<T>(), p.src.ptr<const T>());
  });
}

std::optional<std::string> simd_unavailable(const CopyProblem& p) {
  if (auto reason = needs_contiguous_destination(p)) return reason;
  return lacks_avx2();
}

// ---- reorder (oneDNN) ----

#ifdef FLOPSCOPE_HAVE_ONEDNN
struct ReorderDescs {
  dnnl::memory::desc dst, src;
};

// The view's dims and strides as oneDNN memory descriptors of a type of the element's size.
ReorderDescs reorder_descs(const CopyProblem& p) {
  using dt = dnnl::memory::data_type;
  const std::size_t size = p.src.element_size();
  const dt type = size == 1 ? dt::u8 : size == 2 ? dt::bf16 : dt::s32;
  const std::int64_t words = size == 8 ? 2 : 1;  // an 8-byte element as two s32
  dnnl::memory::dims dims, dst_strides, src_strides;
  for (int d = 0; d < p.src.dims; ++d) {
    dims.push_back(p.src.sizes[d]);
    // A dimension of size 1 is never stepped along, so its stride is any number (x[:, ::k] with
    // k >= n): oneDNN copies wrong elements with one near 2^61, so it takes the destination's.
    const std::int64_t src_stride = p.src.sizes[d] == 1 ? p.dst.strides[d] : p.src.strides[d];
    dst_strides.push_back(checked_mul(p.dst.strides[d], words, "reorder stride"));
    src_strides.push_back(checked_mul(src_stride, words, "reorder stride"));
  }
  if (words == 2 || dims.empty()) {
    dims.push_back(words);
    dst_strides.push_back(1);
    src_strides.push_back(1);
  }
  return {dnnl::memory::desc(dims, type, dst_strides), dnnl::memory::desc(dims, type, src_strides)};
}

std::optional<std::string> reorder_unavailable(const CopyProblem& p) {
  if (auto reason = needs_contiguous_destination(p)) return reason;
  if (p.src.numel() == 0) return std::nullopt;
  return dnnl_refusal([&] {
    const ReorderDescs d = reorder_descs(p);
    dnnl::reorder::primitive_desc(dnnl_cpu_engine(), d.src, dnnl_cpu_engine(), d.dst);
  });
}

Runner reorder_prepare(const CopyProblem& p) {
  if (p.src.numel() == 0) return [](Stream) {};
  const ReorderDescs d = reorder_descs(p);
  const dnnl::reorder::primitive_desc pd(dnnl_cpu_engine(), d.src, dnnl_cpu_engine(), d.dst);
  return dnnl_runner(dnnl::reorder(pd), {{DNNL_ARG_FROM, dnnl::memory(d.src, dnnl_cpu_engine(), p.src.element_data())},
                                         {DNNL_ARG_TO, dnnl::memory(d.dst, dnnl_cpu_engine(), p.dst.element_data())}});
}
#else
std::optional<std::string> reorder_unavailable(const CopyProblem&) { return "built without oneDNN"; }
Runner reorder_prepare(const CopyProblem&) { throw std::logic_error("reorder: built without oneDNN"); }
#endif

constexpr std::array<CopyVariant, 4> kVariants = {{
    {"naive", "the output in order, one element at a time from src's strides", Device::Kind::cpu,
     needs_contiguous_destination, direct<CopyProblem, strided_naive>},
    {"blocked", "cache-blocked tiles (rows by memcpy, transposes in L1 tiles, element by element)",
     Device::Kind::cpu, needs_contiguous_destination, direct<CopyProblem, strided_blocked>, nullptr, {}, Role::own,
     {.checker = true}},
    {"simd", "blocked with in-register transposes (AVX-512/AVX2), vector rows, streaming stores above the LLC",
     Device::Kind::cpu, simd_unavailable, direct<CopyProblem, strided_simd>, nullptr, {}, Role::own, {.speed = 1}},
    {"reorder", "oneDNN's reorder primitive on the view's dims and strides (vendor)", Device::Kind::cpu,
     reorder_unavailable, reorder_prepare, nullptr, {}, Role::vendor},
}};

}  // namespace

std::span<const CopyVariant> cpu_strided_variants() { return kVariants; }

}  // namespace flopscope::kernels
