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
#include <string_view>
#include <vector>

#include "flopscope/checked.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/memory.hpp"

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

// The fewest bytes of an op that reads each of `inputs` once and writes `output` once, all of
// `dtype` (an einsum, for one).
std::int64_t read_once_bytes(std::span<const std::vector<std::int64_t>> inputs, std::span<const std::int64_t> output,
                             DType dtype);
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
// A mean: the sum, then one division per result.
Cost mean_cost(std::int64_t in_numel, std::int64_t out_numel, DType dtype);

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

// torch.matmul's operands as bytes: each operand's own elements read once (a broadcast operand
// once, not once per batch) and the output written once.
Cost matmul_cost(std::span<const std::int64_t> a, std::span<const std::int64_t> b, DType a_dtype, DType b_dtype,
                 DType c_dtype);
// What torch.utils.flop_counter counts for torch.matmul on these shapes: matmul_flops(a, b), except
// 0 where b is 1-D (PyTorch runs mv or dot there, which its counter does not count; a 1-D a runs
// mm or bmm and is counted). Note [PyTorch's flop counter].
std::int64_t pytorch_matmul_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b);

// ---- PyTorch's flop counter ----
// Note [PyTorch's flop counter]: torch.utils.flop_counter.FlopCounterMode (torch/utils/
// flop_counter.py) counts only these aten ops, 2 FLOPs per multiply-add, forward and backward
// alike, and nothing else (no elementwise op, no bias, no softmax, no norm, no reduction):
//   mm (m,k)x(k,n): 2·m·k·n;  addmm: the mm alone (its bias add is not counted);
//   bmm, baddbmm: 2·b·m·k·n;  convolution: 2 x output points x filter size x c_in x c_out;
//   scaled dot-product attention (flash, efficient, cudnn, and on the CPU flash_attention_for_cpu),
//   q (b,h,s_q,d), k (b,h,s_k,d), v (b,h,s_k,d_v): forward the two bmms q·kᵀ and p·v; backward
//   five bmms (the scores q·kᵀ recomputed, then dP = dO·vᵀ, dV = pᵀ·dO, dQ = dS·k, dK = dSᵀ·q);
//   a causal mask changes neither.
// A linear layer is addmm (or mm without bias) forward and two mm backward (one without the
// input's gradient). Checked against FlopCounterMode by tests/python/test_cli_account.py.
std::int64_t bmm_flops(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k);
std::int64_t sdpa_forward_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                                std::int64_t head_dim, std::int64_t value_dim);
std::int64_t sdpa_backward_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                                 std::int64_t head_dim, std::int64_t value_dim);
// Their FLOPs as above; bytes: forward reads q, k, v and writes the output and the per-row
// logsumexp (f32) that the backward pass uses; backward reads q, k, v, the output, its gradient and
// the logsumexp and writes dq, dk, dv (all of `dtype` but the logsumexp).
Cost sdpa_forward_cost(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                       std::int64_t head_dim, std::int64_t value_dim, DType dtype);
Cost sdpa_backward_cost(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                        std::int64_t head_dim, std::int64_t value_dim, DType dtype);

// ---- the full count: elementwise ops of a network ----

// A training pass.
enum class Pass { forward, backward };
std::string_view pass_name(Pass pass);  // "forward", "backward"

// Note [full count]: the full count is PyTorch's count plus every op PyTorch's counter leaves
// out, each at its own per-element cost, from this one table. Conventions of the table:
// - one FLOP per arithmetic operation and per transcendental (exp, tanh, rsqrt, log), per element;
//   a "row" is the last dimension, which softmax and the norms reduce over;
// - backward rows are what autograd computes from the saved tensors, including recomputation
//   (GELU's backward recomputes tanh), for the gradient of the op's input and, for the norms, of
//   their weights; sums over rows (bias and norm-weight gradients) count one addition per summed
//   element;
// - bytes: reads and writes of tensors of the op's size, in the activation dtype; parameter
//   vectors (norm weights, biases) and per-row statistics are not counted.
enum class ElementwiseKind {
  add,              // a + b (residual, position embedding); backward passes the gradient on
  bias,             // y + bias over rows; backward sums dY over the rows
  grad_accumulate,  // backward only: two gradients of one tensor summed (a tensor used twice)
  scale,            // x · constant (attention's 1/sqrt(d))
  mask,             // masked_fill / where (the causal mask): a select, no arithmetic
  gelu_tanh,        // GPT-2's GELU: 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x³)))
  silu,             // x·sigmoid(x) = x / (1 + exp(-x))
  mul,              // a · b (SwiGLU's gate)
  softmax,          // over a row
  log_softmax,      // over a row (cross-entropy's first half)
  nll_loss,         // cross-entropy's second half: pick the target's log-probability per row
  layer_norm,       // with weight and bias
  rms_norm,         // with weight
  rope,             // rotary position embedding of q or k
  embedding,        // gather rows of a table; backward scatter-adds into the table's gradient
};

// Costs of one pass over `rows` rows of `row_length` elements.
struct PassRule {
  std::int64_t flops_per_element, flops_per_row;
  std::int64_t reads_per_element, reads_per_row;    // elements of the op's dtype
  std::int64_t writes_per_element, writes_per_row;
};

struct ElementwiseRule {
  ElementwiseKind kind;
  std::string_view name;
  PassRule forward, backward;
  std::string_view forward_formula, backward_formula;  // how the counts were made
};

// The one table (Note [full count]), in ElementwiseKind order.
std::span<const ElementwiseRule> elementwise_rules();
const ElementwiseRule& elementwise_rule(ElementwiseKind kind);
// FLOPs and bytes of one pass of the op over rows x row_length elements of `dtype`.
Cost elementwise_op_cost(ElementwiseKind kind, Pass pass, std::int64_t rows, std::int64_t row_length, DType dtype);

// ---- optimizer steps ----

// Note [optimizer FLOPs]: one update of `params` parameters, the f32 master weights and their f32
// gradient (PyTorch's single-tensor, non-fused formulas, with the constants folded ahead):
// - SGD: w -= lr·g: 2 FLOPs per parameter; reads w and g, writes w.
// - SGD with momentum: b = mu·b + g (2); w -= lr·b (2): 4 FLOPs; reads w, g, b, writes w, b.
// - AdamW: w·(1 - lr·wd) (1); m = b1·m + (1 - b1)·g (3); v = b2·v + (1 - b2)·g² (4);
//   w -= (lr / (1 - b1^t)) · m / (sqrt(v) / sqrt(1 - b2^t) + eps) (sqrt, scale, add, divide,
//   multiply, subtract: 6): 14 FLOPs per parameter; reads w, g, m, v, writes w, m, v.
// Mixed precision (`copy` a narrow dtype, not f32): the updated weights are also written rounded
// to `copy` (the working copy the next forward pass reads), with no FLOPs counted for the rounding.
// PyTorch's flop counter counts none of this; the full count does.
// (Optimizer, its names and parse_optimizer are memory.hpp's, with the training state they keep.)
Cost optimizer_step_cost(Optimizer optimizer, std::int64_t params, DType copy = DType::f32);

// ---- peak kernels ----

// `fmas` fused multiply-adds: 2 FLOPs each.
std::int64_t fma_flops(std::int64_t fmas);
// Independent FMA chains (the peak kernels): threads x trips x chains x lanes, each step of a lane
// `flops_per_lane` FLOPs (2 for an FMA; 4 for vdpbf16ps, two multiply-adds per f32 lane).
std::int64_t fma_chain_flops(std::int64_t threads, std::int64_t trips, std::int64_t chains, std::int64_t lanes,
                             std::int64_t flops_per_lane);

}  // namespace flopscope
