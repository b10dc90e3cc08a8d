// Which integer a CUDA kernel does its index math in: 32 bits where every index fits, else 64. A
// 64-bit division or remainder is a long instruction sequence on a GPU, a 32-bit one a few
// instructions; a 64-bit index also takes two registers and a 64-bit multiply more than one
// instruction. Pure functions of the sizes, so that the choice is tested on a host.
#pragma once

#include <cstdint>
#include <limits>

namespace flopscope::kernels {

// True where a grid-stride loop over `count` items run by `threads` threads, reading or writing
// element offsets up to `largest_offset`, forms no index past int32: the loop counter's last
// value (below count + threads) and every offset.
constexpr bool fits_int32(std::int64_t count, std::int64_t threads, std::int64_t largest_offset) {
  constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
  return count >= 0 && threads >= 0 && largest_offset >= 0 && threads <= most && count <= most - threads &&
         largest_offset <= most;
}

// A matmul's sizes and strides as a CUDA kernel indexes them: C (m x n) = A (m x k)·B (k x n),
// strides in elements, each operand's offsets counted from its element (0, 0) (a view's storage
// offset is added to the pointer on the host, in 64 bits, never in a kernel's index math).
struct MatmulExtents {
  std::int64_t m, n, k;
  std::int64_t as0, as1, bs0, bs1, cs0, cs1;
};

// How a tiled matmul kernel walks them: a block computes a tile_m x tile_n tile of C, its k loop
// steps by tile_k. offsets_past_edge: the kernel forms A's and B's offsets over whole tiles,
// past the operands' edges, before it checks them (mma's cp.async chunk addresses); otherwise it
// forms an offset only for an element it reads or writes.
struct MatmulTiling {
  std::int64_t tile_m, tile_n, tile_k;
  bool offsets_past_edge = false;
};

namespace index_width_detail {

inline constexpr std::int64_t kMost = std::numeric_limits<std::int32_t>::max();

// Whether r·s0 + c·s1 fits int32 for every r < rows, c < cols (rows, cols within int32).
constexpr bool offsets_fit(std::int64_t rows, std::int64_t cols, std::int64_t s0, std::int64_t s1) {
  const std::int64_t r = rows > 0 ? rows - 1 : 0, c = cols > 0 ? cols - 1 : 0;
  if (s0 < 0 || s1 < 0 || (r > 0 && s0 > kMost / r) || (c > 0 && s1 > kMost / c)) return false;
  return r * s0 <= kMost - c * s1;
}

}  // namespace index_width_detail

// True where a tiled matmul kernel forms no index past int32: its row, column and k counters
// run up to m, n and k rounded up to whole tiles, and its offsets are those of A, B and C's
// elements (A's and B's over the whole tiles where offsets_past_edge).
constexpr bool fits_int32(const MatmulExtents& e, const MatmulTiling& t) {
  using index_width_detail::kMost;
  using index_width_detail::offsets_fit;
  if (e.m < 0 || e.n < 0 || e.k < 0 || e.m > kMost || e.n > kMost || e.k > kMost) return false;
  if (t.tile_m < 1 || t.tile_n < 1 || t.tile_k < 1 || t.tile_m > kMost || t.tile_n > kMost || t.tile_k > kMost)
    return false;
  auto rounded = [](std::int64_t size, std::int64_t tile) { return (size + tile - 1) / tile * tile; };
  const std::int64_t m = rounded(e.m, t.tile_m), n = rounded(e.n, t.tile_n), k = rounded(e.k, t.tile_k);
  if (m > kMost || n > kMost || k > kMost) return false;
  const bool past = t.offsets_past_edge;
  return offsets_fit(past ? m : e.m, past ? k : e.k, e.as0, e.as1) &&
         offsets_fit(past ? k : e.k, past ? n : e.n, e.bs0, e.bs1) && offsets_fit(e.m, e.n, e.cs0, e.cs1);
}

}  // namespace flopscope::kernels
