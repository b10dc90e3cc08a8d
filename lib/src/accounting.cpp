#include "flopscope/accounting.hpp"

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

std::int64_t fma_chain_flops(std::int64_t threads, std::int64_t trips, std::int64_t chains, std::int64_t lanes,
                             std::int64_t flops_per_lane) {
  const char* what = "FMA chain FLOPs";
  const std::int64_t per_step = checked_mul(checked_mul(chains, lanes, what), flops_per_lane, what);
  return checked_mul(checked_mul(threads, trips, what), per_step, what);
}

}  // namespace flopscope
