// Every FLOP and byte rule of flopscope, in one module, used by the bench cases (their flops and
// bytes counters), the flopscope tool and the tests alike. DESIGN.md's conventions:
//
// - FLOPs: one multiply-add is 2 FLOPs; a matmul (m,k)x(k,n) is 2·m·k·n, as in PyTorch's
//   torch.utils.flop_counter. Elementwise ops count one FLOP per output element per arithmetic
//   op, and are reported apart from matmul-class FLOPs.
// - Bytes: the fewest that must cross the memory interface: each input element read once (a
//   broadcast operand counts its own size, not the output's), each output element written once.
//   Write-allocate traffic is not counted, so streaming stores show up as higher bandwidth.
//
// Every count is exact integer arithmetic, checked (checked.hpp): a count that does not fit
// int64 throws SizeOverflow naming what was being counted.
#pragma once

#include <cstdint>
#include <span>

#include "flopscope/checked.hpp"
#include "flopscope/dtype.hpp"

namespace flopscope {

// What one execution of an op costs.
struct Cost {
  std::int64_t flops = 0;
  std::int64_t bytes = 0;
  friend bool operator==(const Cost&, const Cost&) = default;
};

// ---- moving elements ----

// A copy of n elements: read once, written once: 2·n·size bytes, no FLOPs. A strided copy (a
// view made contiguous) counts the same logical bytes; what its access pattern really touches is
// a separate, modelled figure.
Cost copy_cost(std::int64_t numel, DType dtype);
// A conversion of n elements from one dtype to another: n·(size(from) + size(to)) bytes.
Cost convert_cost(std::int64_t numel, DType from, DType to);

// A strided copy: dst (any strides, usually contiguous) = src, a view of `sizes` and
// `src_strides`. Logical bytes: each element of the view read once and each element of dst
// written once; a dimension of stride 0 (expand) repeats elements that are read once, not once
// per repetition (a broadcast operand counts its own size). Equal to copy_cost for every view
// without stride-0 dimensions (transposes, permutes, slices).
Cost strided_copy_cost(std::span<const std::int64_t> sizes, std::span<const std::int64_t> src_strides, DType dtype);

// ---- the cache-line model: what a strided access really touches ----
//
// Memory moves in whole lines (64-byte cache lines on the CPU, 32-byte sectors on a CUDA GPU), so
// a view whose elements are spread out brings in bytes it never uses. The model counts the
// distinct lines that the elements of a view lie in, each brought in once: an ideal cache that
// keeps a line until the op is done. So a cache-blocked transpose touches what a contiguous copy
// touches (it is the kernel's job to get there), a slice x[:, ::k] reads every whole line around
// its elements (k = 2 of f32 reads every line: 2x its bytes; k >= 16 one line per element: 16x),
// and an expanded (stride-0) source is read once. Storage is taken to start on a line boundary
// (the harness's and cudaMalloc's allocations do). bytes_touched = lines x line size.
inline constexpr std::int64_t kCpuCacheLineBytes = 64;
inline constexpr std::int64_t kCudaSectorBytes = 32;

// Distinct lines of `line_bytes` (a multiple of `element_size`) holding the elements of the view
// (sizes, strides and offset in elements, strides >= 0); 0 for a view of no elements. Exact for
// every view: views whose rows (runs along the smallest stride) follow one another in memory are
// counted row by row in O(rows); rows that interleave (some as_strided views) by listing every
// line (std::invalid_argument above 2^28 elements).
std::int64_t lines_touched(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides,
                           std::int64_t offset, std::int64_t element_size, std::int64_t line_bytes);

// A strided copy's bytes_touched: the lines of the source view read plus the lines of the
// destination written (both of `sizes`), times the line size. Compare with strided_copy_cost's
// bytes: their ratio is what the access pattern wastes.
std::int64_t strided_copy_bytes_touched(std::span<const std::int64_t> sizes, std::span<const std::int64_t> dst_strides,
                                        std::int64_t dst_offset, std::span<const std::int64_t> src_strides,
                                        std::int64_t src_offset, DType dtype, std::int64_t line_bytes);

// ---- elementwise ----

// One FLOP per output element (DESIGN.md: elementwise ops are counted on their own).
std::int64_t elementwise_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b);
// Fewest bytes: each input element read once (a broadcast operand once, not per output element)
// and each output element written once, all of `dtype`.
std::int64_t elementwise_bytes(std::span<const std::int64_t> a, std::span<const std::int64_t> b, DType dtype);
// A binary op of operands a and b (broadcast by PyTorch's rules), `ops` arithmetic operations per
// output element.
Cost elementwise_binary_cost(std::span<const std::int64_t> a, std::span<const std::int64_t> b, DType dtype,
                             std::int64_t ops = 1);
// STREAM triad a = b + s·c over n elements: 2 FLOPs per element (an FMA), 3·n·size bytes.
Cost triad_cost(std::int64_t numel, DType dtype);

// ---- reductions ----

// A sum of `in_numel` elements into `out_numel` results: in - out additions; bytes in + out.
Cost reduction_cost(std::int64_t in_numel, std::int64_t out_numel, DType dtype);

// ---- matmul ----

// 2·m·n·k.
std::int64_t matmul_flops(std::int64_t m, std::int64_t n, std::int64_t k);
// torch.matmul's operands: 2·batch·m·k·n, where batch is the product of the broadcast batch
// dimensions (torch.utils.flop_counter's count for the bmm/mm it runs). For 1-D operands, m or n
// is 1 (PyTorch runs dot/mv there, which its flop counter does not count).
std::int64_t matmul_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b);
// C (m x n, of c_dtype) = A (m x k, a_dtype) · B (k x n, b_dtype): 2·m·n·k FLOPs; each operand
// read once and C written once.
Cost matmul_cost(std::int64_t m, std::int64_t n, std::int64_t k, DType a_dtype, DType b_dtype, DType c_dtype);
// The backward pass of Y = X·W (X: m x k, W: k x n) given dY: dW = Xᵀ·dY and, unless X is the
// network's input, dX = dY·Wᵀ: each 2·m·n·k FLOPs (so 4·m·n·k, twice the forward). Bytes: dY, W
// and X read once, dW (and dX) written once, all of `dtype`.
Cost matmul_backward_cost(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, bool input_grad = true);

// ---- peak kernels ----

// `fmas` fused multiply-adds: 2 FLOPs each.
std::int64_t fma_flops(std::int64_t fmas);

}  // namespace flopscope
