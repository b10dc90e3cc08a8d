#include "flopscope/broadcast.hpp"

#include <algorithm>
#include <string>

#include "flopscope/flop_counter.hpp"

namespace flopscope {

Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  const std::size_t dims = std::max(a.size(), b.size());
  Shape out(dims);
  for (std::size_t i = 0; i < dims; ++i) {  // i counts from the right
    const std::int64_t size_a = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t size_b = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (size_a != size_b && size_a != 1 && size_b != 1)
      throw ShapeError("broadcast_shapes: shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast: the size of tensor a (" + std::to_string(size_a) +
                       ") must match the size of tensor b (" + std::to_string(size_b) + ") at non-singleton dimension " +
                       std::to_string(dims - 1 - i));
    out[dims - 1 - i] = size_a == 1 ? size_b : size_a;
  }
  return out;
}

Shape broadcast_shapes(std::span<const Shape> shapes) {
  Shape out;
  for (const auto& shape : shapes) out = broadcast_shapes(out, shape);
  return out;
}


// ---- elementwise -----------------------------------------------------------------------------

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  auto is_fp8 = [](DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; };
  if (is_fp8(a) || is_fp8(b))
    throw std::invalid_argument("promote_types(" + std::string(dtype_name(a)) + ", " + std::string(dtype_name(b)) +
                                "): promotion for float8 types is not supported (as in PyTorch); convert first");
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  return DType::f32;  // f32 with f16/bf16, or f16 with bf16
}

namespace {

Tensor on_host(const Tensor& t) { return t.device().is_cpu() ? t : t.to(Device::cpu()); }

template <typename Op>
Tensor binary(const char* name, const Tensor& a, const Tensor& b, Op op) {
  Shape shape;
  try {
    shape = broadcast_shapes(a.shape(), b.shape());
  } catch (const ShapeError&) {
    throw ShapeError(std::string(name) + ": shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                     " cannot be broadcast together");
  }
  const DType dtype = promote_types(a.dtype(), b.dtype());
  if (counting()) {
    const Cost cost = elementwise_binary_cost(a.shape(), b.shape(), dtype);
    report({.op = name, .module = {}, .pass = current_pass(), .shapes = {a.shape(), b.shape()}, .dtype = dtype,
            .pytorch_flops = 0, .flops = cost.flops, .bytes = cost.bytes, .matmuls = {}});
  }
  const Tensor operands[] = {empty(shape, {dtype, Device::cpu()}), on_host(a).expand(shape), on_host(b).expand(shape)};
  auto* out = static_cast<std::byte*>(operands[0].storage()->data());
  const auto* in_a = static_cast<const std::byte*>(operands[1].storage()->data());
  const auto* in_b = static_cast<const std::byte*>(operands[2].storage()->data());
  const auto size_out = static_cast<std::int64_t>(dtype_size(dtype));
  const auto size_a = static_cast<std::int64_t>(a.element_size()), size_b = static_cast<std::int64_t>(b.element_size());
  for (StridedIterator it = strided_iterator(operands); !it.done(); it.next()) {
    const double x = load_element(in_a + it.offset(1) * size_a, a.dtype());
    const double y = load_element(in_b + it.offset(2) * size_b, b.dtype());
    store_element(out + it.offset(0) * size_out, dtype, op(x, y));
  }
  return operands[0].to(a.device());
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", a, b, [](double x, double y) { return x + y; }); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary("sub", a, b, [](double x, double y) { return x - y; }); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("mul", a, b, [](double x, double y) { return x * y; }); }
Tensor div(const Tensor& a, const Tensor& b) { return binary("div", a, b, [](double x, double y) { return x / y; }); }

// ---- matmul ----------------------------------------------------------------------------------

MatmulGeometry matmul_geometry(std::span<const std::int64_t> a, std::span<const std::int64_t> b) {
  const std::string shapes = "matmul: shapes " + shape_str(a) + " and " + shape_str(b);
  if (a.empty() || b.empty()) throw ShapeError(shapes + ": both arguments to matmul need to be at least 1D");
  MatmulGeometry g;
  Shape a_matrix(a.begin(), a.end()), b_matrix(b.begin(), b.end());
  if (a.size() == 1) a_matrix.insert(a_matrix.begin(), 1);
  if (b.size() == 1) b_matrix.push_back(1);
  g.m = a_matrix[a_matrix.size() - 2];
  g.k = a_matrix.back();
  const std::int64_t k_b = b_matrix[b_matrix.size() - 2];
  g.n = b_matrix.back();
  if (g.k != k_b)
    throw ShapeError(shapes + " cannot be multiplied (" + std::to_string(g.k) + " != " + std::to_string(k_b) + ")");
  const std::span<const std::int64_t> batch_a(a_matrix.data(), a_matrix.size() - 2);
  const std::span<const std::int64_t> batch_b(b_matrix.data(), b_matrix.size() - 2);
  try {
    g.batch = broadcast_shapes(batch_a, batch_b);
  } catch (const ShapeError&) {
    throw ShapeError(shapes + ": batch dimensions " + shape_str(batch_a) + " and " + shape_str(batch_b) +
                     " cannot be broadcast");
  }
  g.output = g.batch;
  if (a.size() > 1) g.output.push_back(g.m);
  if (b.size() > 1) g.output.push_back(g.n);
  return g;
}

Shape matmul_shape(std::span<const std::int64_t> a, std::span<const std::int64_t> b) { return matmul_geometry(a, b).output; }

Tensor matmul(const Tensor& a, const Tensor& b) {
  const MatmulGeometry g = matmul_geometry(a.shape(), b.shape());
  const DType dtype = promote_types(a.dtype(), b.dtype());
  if (counting()) {
    const Cost cost = matmul_cost(a.shape(), b.shape(), a.dtype(), b.dtype(), dtype);
    const MatmulShape product{.name = "matmul", .role = MatmulRole::forward, .layout = MatmulLayout::NN,
                              .batch = checked_numel(g.batch, "matmul batch"), .m = g.m, .n = g.n, .k = g.k};
    report({.op = "matmul", .module = {}, .pass = current_pass(), .shapes = {a.shape(), b.shape()}, .dtype = dtype,
            .pytorch_flops = pytorch_matmul_flops(a.shape(), b.shape()), .flops = cost.flops, .bytes = cost.bytes,
            .matmuls = {product}});
  }
  // As matrices with broadcast batch dimensions: [batch..., m, k] and [batch..., k, n].
  Tensor left = on_host(a), right = on_host(b);
  if (left.dim() == 1) left = left.unsqueeze(0);
  if (right.dim() == 1) right = right.unsqueeze(-1);
  Shape left_shape = g.batch, right_shape = g.batch, out_shape = g.batch;
  left_shape.insert(left_shape.end(), {g.m, g.k});
  right_shape.insert(right_shape.end(), {g.k, g.n});
  out_shape.insert(out_shape.end(), {g.m, g.n});
  left = left.expand(left_shape);
  right = right.expand(right_shape);
  Tensor out = empty(out_shape, {dtype, Device::cpu()});
  const auto batch_dims = g.batch.size();
  // One walk over the batch dimensions; within a batch, the plain triple loop.
  Shape batch_shape = g.batch;
  auto batch_part = [&](const Tensor& t) { return Strides(t.strides().begin(), t.strides().begin() + static_cast<std::ptrdiff_t>(batch_dims)); };
  const auto* base_l = static_cast<const std::byte*>(left.storage()->data());
  const auto* base_r = static_cast<const std::byte*>(right.storage()->data());
  auto* base_o = static_cast<std::byte*>(out.storage()->data());
  const auto size_l = static_cast<std::int64_t>(left.element_size()), size_r = static_cast<std::int64_t>(right.element_size());
  const auto size_o = static_cast<std::int64_t>(out.element_size());
  const std::int64_t lm = left.strides()[batch_dims], lk = left.strides()[batch_dims + 1];
  const std::int64_t rk = right.strides()[batch_dims], rn = right.strides()[batch_dims + 1];
  const std::int64_t om = out.strides()[batch_dims], on = out.strides()[batch_dims + 1];
  for (StridedIterator it(batch_shape, {batch_part(left), batch_part(right), batch_part(out)},
                          {left.storage_offset(), right.storage_offset(), out.storage_offset()});
       !it.done(); it.next()) {
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (std::int64_t p = 0; p < g.k; ++p)
          sum += load_element(base_l + (it.offset(0) + i * lm + p * lk) * size_l, left.dtype()) *
                 load_element(base_r + (it.offset(1) + p * rk + j * rn) * size_r, right.dtype());
        store_element(base_o + (it.offset(2) + i * om + j * on) * size_o, dtype, sum);
      }
  }
  return out.view(g.output).to(a.device());
}

}  // namespace flopscope
