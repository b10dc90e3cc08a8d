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

std::int64_t fma_flops(std::int64_t fmas) { return checked_mul<std::int64_t>(2, fmas, "FMA FLOPs"); }

}  // namespace flopscope
