#include "flopscope/accounting.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "flopscope/broadcast.hpp"

namespace flopscope {

namespace {

std::int64_t size_of(DType dtype) { return static_cast<std::int64_t>(dtype_size(dtype)); }

}  // namespace

Cost copy_cost(std::int64_t numel, DType dtype) {
  return {0, checked_mul<std::int64_t>(2, checked_bytes(numel, dtype_size(dtype), "copy bytes"), "copy bytes")};
}

Cost convert_cost(std::int64_t numel, DType from, DType to) {
  return {0, checked_bytes(numel, dtype_size(from) + dtype_size(to), "conversion bytes")};
}

std::int64_t read_once_bytes(std::span<const std::vector<std::int64_t>> inputs, std::span<const std::int64_t> output,
                             DType dtype) {
  const char* what = "bytes read and written";
  std::int64_t elements = checked_numel(output, what);
  for (const auto& input : inputs) elements = checked_add(elements, checked_numel(input, what), what);
  return checked_bytes(elements, dtype_size(dtype), what);
}

Cost strided_copy_cost(std::span<const std::int64_t> sizes, std::span<const std::int64_t> src_strides, DType dtype) {
  const char* what = "strided copy bytes";
  if (sizes.size() != src_strides.size())
    throw std::invalid_argument("strided_copy_cost: " + std::to_string(sizes.size()) + " sizes but " +
                                std::to_string(src_strides.size()) + " strides");
  const std::int64_t numel = checked_numel(sizes, what);
  std::int64_t read = numel == 0 ? 0 : 1;  // the distinct elements: stride-0 dimensions repeat them
  for (std::size_t d = 0; d < sizes.size(); ++d)
    if (src_strides[d] != 0) read = checked_mul(read, sizes[d], what);
  return {0, checked_bytes(checked_add(read, numel, what), dtype_size(dtype), what)};
}

namespace {

struct Run {  // one dimension of a view that spreads elements: `size` elements `stride` apart
  std::int64_t stride, size;
};

// Every line, listed: for views whose rows interleave.
std::int64_t lines_listed(const std::vector<Run>& runs, std::int64_t offset, std::int64_t element_size,
                          std::int64_t line_bytes) {
  std::int64_t count = 1;
  for (const Run& r : runs) count = checked_mul(count, r.size, "lines_touched");
  if (count > (std::int64_t{1} << 28))
    throw std::invalid_argument("lines_touched: a view of " + std::to_string(count) +
                                " elements whose rows interleave is too irregular to count line by line");
  std::vector<std::int64_t> lines;
  lines.reserve(static_cast<std::size_t>(count));
  std::vector<std::int64_t> index(runs.size(), 0);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t element = offset;
    for (std::size_t d = 0; d < runs.size(); ++d) element += index[d] * runs[d].stride;
    lines.push_back(element * element_size / line_bytes);
    for (std::size_t d = 0; d < runs.size() && ++index[d] == runs[d].size; ++d) index[d] = 0;
  }
  std::sort(lines.begin(), lines.end());
  return std::unique(lines.begin(), lines.end()) - lines.begin();
}

}  // namespace

std::int64_t lines_touched(std::span<const std::int64_t> sizes, std::span<const std::int64_t> strides,
                           std::int64_t offset, std::int64_t element_size, std::int64_t line_bytes) {
  if (sizes.size() != strides.size())
    throw std::invalid_argument("lines_touched: " + std::to_string(sizes.size()) + " sizes but " +
                                std::to_string(strides.size()) + " strides");
  if (element_size <= 0 || line_bytes <= 0 || line_bytes % element_size != 0 || offset < 0)
    throw std::invalid_argument("lines_touched: lines of " + std::to_string(line_bytes) + " bytes, elements of " +
                                std::to_string(element_size) + " and offset " + std::to_string(offset));
  if (checked_numel(sizes, "lines_touched") == 0) return 0;
  // The dimensions that spread elements, by stride, merged where one continues another: a
  // permutation of a contiguous tensor becomes one run, a slice x[:, ::k] rows of stride k.
  std::vector<Run> runs;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] < 0) throw std::invalid_argument("lines_touched: negative stride " + std::to_string(strides[d]));
    if (sizes[d] > 1 && strides[d] != 0) runs.push_back({strides[d], sizes[d]});
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.stride < b.stride; });
  std::vector<Run> merged;
  for (const Run& r : runs) {
    if (!merged.empty() && r.stride == merged.back().stride * merged.back().size)
      merged.back().size = checked_mul(merged.back().size, r.size, "lines_touched");
    else
      merged.push_back(r);
  }
  if (merged.empty()) return 1;
  // A row: the run of the smallest stride. Its lines: one per element when elements are a line or
  // more apart, else every line from its first element's to its last's.
  const Run row = merged.front();
  const std::int64_t step = checked_mul(row.stride, element_size, "lines_touched");
  const std::int64_t row_span = checked_mul(row.size - 1, step, "lines_touched");
  const std::vector<Run> outer(merged.begin() + 1, merged.end());
  std::vector<std::int64_t> index(outer.size(), 0);
  std::int64_t lines = 0, last = -1;  // last: byte address of the previous row's last element
  for (;;) {
    std::int64_t first = offset;
    for (std::size_t d = 0; d < outer.size(); ++d) first += index[d] * outer[d].stride;
    first = checked_mul(first, element_size, "lines_touched");
    if (first <= last) return lines_listed(merged, offset, element_size, line_bytes);  // rows interleave
    const std::int64_t row_lines = step >= line_bytes ? row.size : (first + row_span) / line_bytes - first / line_bytes + 1;
    const bool shares_line = last >= 0 && first / line_bytes == last / line_bytes;
    lines = checked_add(lines, row_lines - (shares_line ? 1 : 0), "lines_touched");
    last = first + row_span;
    std::size_t d = 0;
    for (; d < outer.size() && ++index[d] == outer[d].size; ++d) index[d] = 0;
    if (d == outer.size()) return lines;
  }
}

std::int64_t strided_copy_bytes_touched(std::span<const std::int64_t> sizes, std::span<const std::int64_t> dst_strides,
                                        std::int64_t dst_offset, std::span<const std::int64_t> src_strides,
                                        std::int64_t src_offset, DType dtype, std::int64_t line_bytes) {
  const auto element = size_of(dtype);
  const std::int64_t lines = checked_add(lines_touched(sizes, src_strides, src_offset, element, line_bytes),
                                         lines_touched(sizes, dst_strides, dst_offset, element, line_bytes),
                                         "bytes_touched");
  return checked_mul(lines, line_bytes, "bytes_touched");
}

std::int64_t elementwise_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  return checked_numel(broadcast_shapes(a, b), "elementwise FLOPs");
}

std::int64_t elementwise_bytes(std::span<const std::int64_t> a, std::span<const std::int64_t> b, DType dtype) {
  const char* what = "elementwise bytes";
  std::int64_t elements = checked_add(checked_numel(a, what), checked_numel(b, what), what);
  elements = checked_add(elements, checked_numel(broadcast_shapes(a, b), what), what);
  return checked_mul(elements, size_of(dtype), what);
}

Cost elementwise_binary_cost(std::span<const std::int64_t> a, std::span<const std::int64_t> b, DType dtype,
                             std::int64_t ops) {
  return {checked_mul(elementwise_flops(a, b), ops, "elementwise FLOPs"), elementwise_bytes(a, b, dtype)};
}

Cost triad_cost(std::int64_t numel, DType dtype) {
  return {fma_flops(numel), checked_mul<std::int64_t>(3, checked_bytes(numel, dtype_size(dtype), "triad bytes"),
                                                      "triad bytes")};
}

Cost reduction_cost(std::int64_t in_numel, std::int64_t out_numel, DType dtype) {
  const char* what = "reduction bytes";
  return {in_numel > out_numel ? in_numel - out_numel : 0,
          checked_bytes(checked_add(in_numel, out_numel, what), dtype_size(dtype), what)};
}

Cost mean_cost(std::int64_t in_numel, std::int64_t out_numel, DType dtype) {
  Cost cost = reduction_cost(in_numel, out_numel, dtype);
  cost.flops = checked_add(cost.flops, out_numel, "mean FLOPs");
  return cost;
}

std::int64_t matmul_flops(std::int64_t m, std::int64_t n, std::int64_t k) {
  const char* what = "matmul FLOPs";
  return checked_mul<std::int64_t>(2, checked_mul(checked_mul(m, n, what), k, what), what);
}

std::int64_t matmul_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  const MatmulGeometry g = matmul_geometry(a, b);
  const std::int64_t rows = checked_mul(checked_numel(g.batch, "matmul FLOPs"), g.m, "matmul FLOPs");
  return matmul_flops(rows, g.n, g.k);
}

Cost matmul_cost(std::int64_t m, std::int64_t n, std::int64_t k, DType a_dtype, DType b_dtype, DType c_dtype) {
  const char* what = "matmul bytes";
  std::int64_t bytes = checked_bytes(checked_mul(m, k, what), dtype_size(a_dtype), what);
  bytes = checked_add(bytes, checked_bytes(checked_mul(k, n, what), dtype_size(b_dtype), what), what);
  bytes = checked_add(bytes, checked_bytes(checked_mul(m, n, what), dtype_size(c_dtype), what), what);
  return {matmul_flops(m, n, k), bytes};
}

Cost matmul_backward_cost(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype, bool input_grad) {
  const char* what = "matmul backward bytes";
  const std::int64_t x = checked_mul(m, k, what), w = checked_mul(k, n, what), dy = checked_mul(m, n, what);
  // Read dY, X (for dW) and W (for dX); write dW and dX.
  std::int64_t elements = checked_add(checked_add(dy, x, what), w, what);  // reads
  elements = checked_add(elements, w, what);                               // dW
  if (input_grad) elements = checked_add(elements, x, what);               // dX
  else elements -= w;  // without dX, W is not read
  const std::int64_t one = matmul_flops(m, n, k);
  return {input_grad ? checked_add(one, one, "matmul backward FLOPs") : one, checked_mul(elements, size_of(dtype), what)};
}

Cost optimizer_step_cost(Optimizer optimizer, std::int64_t params, DType copy) {
  const char* what = "optimizer step";
  // f32 tensors read (w, g, and the state) and written (w and the state): Note [optimizer FLOPs].
  const std::int64_t state = optimizer == Optimizer::adamw ? 2 : optimizer == Optimizer::sgd_momentum ? 1 : 0;
  const std::int64_t reads = 2 + state, writes = 1 + state;
  const std::int64_t flops = optimizer == Optimizer::adamw ? 14 : optimizer == Optimizer::sgd_momentum ? 4 : 2;
  std::int64_t bytes = checked_bytes(checked_mul(params, reads + writes, what), sizeof(float), what);
  if (copy != DType::f32) bytes = checked_add(bytes, checked_bytes(params, dtype_size(copy), what), what);
  return {checked_mul(params, flops, what), bytes};
}

Cost matmul_cost(std::span<const std::int64_t> a, std::span<const std::int64_t> b, DType a_dtype, DType b_dtype,
                 DType c_dtype) {
  const char* what = "matmul bytes";
  const MatmulGeometry g = matmul_geometry(a, b);
  std::int64_t bytes = checked_bytes(checked_numel(a, what), dtype_size(a_dtype), what);
  bytes = checked_add(bytes, checked_bytes(checked_numel(b, what), dtype_size(b_dtype), what), what);
  bytes = checked_add(bytes, checked_bytes(checked_numel(g.output, what), dtype_size(c_dtype), what), what);
  return {matmul_flops(a, b), bytes};
}

std::int64_t pytorch_matmul_flops(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  const std::int64_t flops = matmul_flops(a, b);  // checks the shapes first
  return b.size() == 1 ? 0 : flops;
}

std::int64_t bmm_flops(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) {
  return checked_mul(batch, matmul_flops(m, n, k), "bmm FLOPs");
}

std::int64_t sdpa_forward_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                                std::int64_t head_dim, std::int64_t value_dim) {
  const char* what = "attention FLOPs";
  const std::int64_t bh = checked_mul(batch, heads, what);
  // scores = q·kᵀ (s_q x d)·(d x s_k); out = p·v (s_q x s_k)·(s_k x d_v).
  return checked_add(bmm_flops(bh, seq_q, seq_k, head_dim), bmm_flops(bh, seq_q, value_dim, seq_k), what);
}

std::int64_t sdpa_backward_flops(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                                 std::int64_t head_dim, std::int64_t value_dim) {
  const char* what = "attention backward FLOPs";
  const std::int64_t bh = checked_mul(batch, heads, what);
  std::int64_t flops = bmm_flops(bh, seq_q, seq_k, head_dim);                      // scores recomputed
  flops = checked_add(flops, bmm_flops(bh, seq_q, seq_k, value_dim), what);        // dP = dO·vᵀ
  flops = checked_add(flops, bmm_flops(bh, seq_k, value_dim, seq_q), what);        // dV = pᵀ·dO
  flops = checked_add(flops, bmm_flops(bh, seq_q, head_dim, seq_k), what);         // dQ = dS·k
  return checked_add(flops, bmm_flops(bh, seq_k, head_dim, seq_q), what);          // dK = dSᵀ·q
}

namespace {

// Elements of q, k, v, the output and the logsumexp rows of an attention.
struct SdpaElements {
  std::int64_t q, k, v, out, rows;
};

SdpaElements sdpa_elements(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                           std::int64_t head_dim, std::int64_t value_dim) {
  const char* what = "attention bytes";
  const std::int64_t rows_q = checked_numel(std::vector<std::int64_t>{batch, heads, seq_q}, what);
  const std::int64_t rows_k = checked_numel(std::vector<std::int64_t>{batch, heads, seq_k}, what);
  return {checked_mul(rows_q, head_dim, what), checked_mul(rows_k, head_dim, what),
          checked_mul(rows_k, value_dim, what), checked_mul(rows_q, value_dim, what), rows_q};
}

}  // namespace

Cost sdpa_forward_cost(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                       std::int64_t head_dim, std::int64_t value_dim, DType dtype) {
  const char* what = "attention bytes";
  const SdpaElements e = sdpa_elements(batch, heads, seq_q, seq_k, head_dim, value_dim);
  const std::int64_t elements = checked_add(checked_add(e.q, e.k, what), checked_add(e.v, e.out, what), what);
  const std::int64_t bytes = checked_add(checked_bytes(elements, dtype_size(dtype), what),
                                         checked_bytes(e.rows, dtype_size(DType::f32), what), what);
  return {sdpa_forward_flops(batch, heads, seq_q, seq_k, head_dim, value_dim), bytes};
}

Cost sdpa_backward_cost(std::int64_t batch, std::int64_t heads, std::int64_t seq_q, std::int64_t seq_k,
                        std::int64_t head_dim, std::int64_t value_dim, DType dtype) {
  const char* what = "attention backward bytes";
  const SdpaElements e = sdpa_elements(batch, heads, seq_q, seq_k, head_dim, value_dim);
  // Reads q, k, v, out, d_out; writes dq, dk, dv.
  std::int64_t elements = checked_add(checked_add(e.q, e.k, what), checked_add(e.v, e.out, what), what);
  elements = checked_add(elements, e.out, what);
  elements = checked_add(elements, checked_add(checked_add(e.q, e.k, what), e.v, what), what);
  const std::int64_t bytes = checked_add(checked_bytes(elements, dtype_size(dtype), what),
                                         checked_bytes(e.rows, dtype_size(DType::f32), what), what);
  return {sdpa_backward_flops(batch, heads, seq_q, seq_k, head_dim, value_dim), bytes};
}

// ---- the full count ----

std::string_view pass_name(Pass pass) { return pass == Pass::forward ? "forward" : "backward"; }

namespace {

// Note [full count] in accounting.hpp. Columns of a PassRule: FLOPs per element, per row; reads
// per element, per row; writes per element, per row.
constexpr ElementwiseRule kElementwiseRules[] = {
    {ElementwiseKind::add, "add", {1, 0, 2, 0, 1, 0}, {0, 0, 0, 0, 0, 0},
     "a + b", "none: both operands get the incoming gradient as it is"},
    {ElementwiseKind::bias, "bias", {1, 0, 0, 0, 0, 0}, {1, 0, 1, 0, 0, 0},
     "y + b, fused into the matmul's output (addmm): no bytes of its own",
     "db = sum of dY over the rows: one addition per element"},
    {ElementwiseKind::grad_accumulate, "grad_accumulate", {0, 0, 0, 0, 0, 0}, {1, 0, 2, 0, 1, 0},
     "none", "dx = dx_1 + dx_2 for a tensor used twice"},
    {ElementwiseKind::scale, "scale", {1, 0, 1, 0, 1, 0}, {1, 0, 1, 0, 1, 0}, "x·c", "dx = c·g"},
    {ElementwiseKind::mask, "mask", {0, 0, 1, 0, 1, 0}, {0, 0, 1, 0, 1, 0},
     "where(mask, x, -inf): a select", "where(mask, g, 0)"},
    {ElementwiseKind::gelu_tanh, "gelu_tanh", {9, 0, 1, 0, 1, 0}, {18, 0, 2, 0, 1, 0},
     "x², x³, ·0.044715, +x, ·sqrt(2/pi), tanh, +1, ·x, ·0.5",
     "tanh recomputed (6); 0.5·(1+t) (2); t², 1-t², 3·0.044715·x², +1, ·sqrt(2/pi), ·(1-t²), ·x, ·0.5 (8); "
     "sum (1); ·g (1)"},
    {ElementwiseKind::silu, "silu", {4, 0, 1, 0, 1, 0}, {9, 0, 2, 0, 1, 0},
     "x / (1 + exp(-x)): neg, exp, +1, div",
     "s = 1 / (1 + exp(-x)) (4); g·s·(1 + x·(1 - s)) (5)"},
    {ElementwiseKind::mul, "mul", {1, 0, 2, 0, 1, 0}, {2, 0, 3, 0, 2, 0}, "a·b", "da = g·b, db = g·a"},
    {ElementwiseKind::softmax, "softmax", {5, 0, 1, 0, 1, 0}, {4, 0, 2, 0, 1, 0},
     "row max, x - max, exp, row sum, divide", "y·(g - sum(g·y)): g·y, row sum, subtract, ·y"},
    {ElementwiseKind::log_softmax, "log_softmax", {5, 1, 1, 0, 1, 0}, {4, 0, 2, 0, 1, 0},
     "row max, x - max, exp, row sum, - log-sum (per row: log, + max)",
     "g - exp(y)·sum(g): row sum, exp, ·, subtract"},
    {ElementwiseKind::nll_loss, "nll_loss", {0, 1, 0, 1, 0, 0}, {0, 1, 0, 0, 1, 0},
     "per row: the target's log-probability added to the loss",
     "per row: -g/rows at the target; the whole row of the gradient written"},
    {ElementwiseKind::layer_norm, "layer_norm", {7, 4, 1, 0, 1, 0}, {13, 2, 2, 0, 1, 0},
     "row sum, x - mean, square, row sum, ·rstd, ·weight, +bias (per row: /n, /n, +eps, rsqrt)",
     "x̂ recomputed (2); g·weight (1); dweight += g·x̂ (2); dbias += g (1); row sums of g·weight and of "
     "g·weight·x̂ (3); rstd·(g·weight - m1 - x̂·m2) (4) (per row: m1 and m2 divided by n)"},
    {ElementwiseKind::rms_norm, "rms_norm", {4, 3, 1, 0, 1, 0}, {9, 1, 2, 0, 1, 0},
     "square, row sum, ·rstd, ·weight (per row: /n, +eps, rsqrt)",
     "x̂ = x·rstd (1); g·weight (1); dweight += g·x̂ (2); row sum of g·weight·x̂ (2); "
     "rstd·(g·weight - x̂·m) (3) (per row: m divided by n)"},
    {ElementwiseKind::rope, "rope", {3, 0, 1, 0, 1, 0}, {3, 0, 1, 0, 1, 0},
     "per pair x1·cos - x2·sin, x1·sin + x2·cos: 6 per 2 elements", "the inverse rotation, the same 6 per pair"},
    {ElementwiseKind::embedding, "embedding", {0, 0, 1, 0, 1, 0}, {1, 0, 2, 0, 1, 0},
     "gather a row of the table per token", "scatter-add each row of g into the table's gradient"},
};

}  // namespace

std::span<const ElementwiseRule> elementwise_rules() { return kElementwiseRules; }

const ElementwiseRule& elementwise_rule(ElementwiseKind kind) {
  return kElementwiseRules[static_cast<std::size_t>(kind)];
}

Cost elementwise_op_cost(ElementwiseKind kind, Pass pass, std::int64_t rows, std::int64_t row_length, DType dtype) {
  const ElementwiseRule& rule = elementwise_rule(kind);
  const PassRule& r = pass == Pass::forward ? rule.forward : rule.backward;
  const std::string what = std::string(rule.name) + " " + std::string(pass_name(pass)) + " cost";
  const std::int64_t numel = checked_numel(std::vector<std::int64_t>{rows, row_length}, what);
  auto per = [&](std::int64_t per_element, std::int64_t per_row) {
    return checked_add(checked_mul(per_element, numel, what), checked_mul(per_row, rows, what), what);
  };
  const std::int64_t elements = checked_add(per(r.reads_per_element, r.reads_per_row),
                                            per(r.writes_per_element, r.writes_per_row), what);
  return {per(r.flops_per_element, r.flops_per_row), checked_bytes(elements, dtype_size(dtype), what)};
}

std::int64_t fma_flops(std::int64_t fmas) { return checked_mul<std::int64_t>(2, fmas, "FMA FLOPs"); }

std::int64_t fma_chain_flops(std::int64_t threads, std::int64_t trips, std::int64_t chains, std::int64_t lanes,
                             std::int64_t flops_per_lane) {
  const char* what = "FMA chain FLOPs";
  const std::int64_t per_step = checked_mul(checked_mul(chains, lanes, what), flops_per_lane, what);
  return checked_mul(checked_mul(threads, trips, what), per_step, what);
}

}  // namespace flopscope
