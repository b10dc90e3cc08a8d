// Optimizer steps on the CPU (optimizer.hpp), and what every device's variants share: the problem
// check, AdamW's folded constants and the f64 reference.
//
// Variant:
//   plain  one pass over the elements, OpenMP chunks on cache-line boundaries, f32 arithmetic with
//          the folded constants; then the narrow copy, rounded from the new weights by the fastest
//          conversion this CPU has (convert.hpp: bit-exact with encode_bits, round to nearest even).
#include <cmath>
#include <cstdint>
#include <string>

#include "flopscope/kernels/convert.hpp"
#include "flopscope/kernels/optimizer.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/tensor.hpp"
#include "parallel.hpp"

namespace flopscope::kernels {

AdamWConstants adamw_constants(const OptimizerHyper& h) {
  const double bc1 = 1 - std::pow(double(h.beta1), h.step), bc2 = 1 - std::pow(double(h.beta2), h.step);
  return {float(1 - double(h.lr) * h.weight_decay), h.beta1, float(1 - double(h.beta1)), h.beta2,
          float(1 - double(h.beta2)), float(h.lr / bc1), float(1 / std::sqrt(bc2)), h.eps};
}

std::optional<std::string> optimizer_problem_error(const OptimizerProblem& p) {
  const bool adamw = p.optimizer == Optimizer::adamw, momentum = p.optimizer == Optimizer::sgd_momentum;
  const std::int64_t count = p.weight.numel();
  const auto bad = [count](const TensorRef& t, bool narrow_ok) {
    const bool dtype_ok = t.dtype == DType::f32 || (narrow_ok && (t.dtype == DType::f16 || t.dtype == DType::bf16));
    return !dtype_ok || !t.is_contiguous() || t.numel() != count;
  };
  for (const TensorRef* t : {&p.weight, &p.grad, &p.new_weight})
    if (bad(*t, false)) return "needs f32 weight, grad and new_weight, contiguous, of one element count (" + t->str() + ")";
  if (adamw || momentum)
    for (const TensorRef* t : {&p.m, &p.new_m})
      if (bad(*t, false)) return "needs f32 m and new_m of the weight's count (" + t->str() + ")";
  if (adamw)
    for (const TensorRef* t : {&p.v, &p.new_v})
      if (bad(*t, false)) return "AdamW needs f32 v and new_v of the weight's count (" + t->str() + ")";
  if (p.has_copy && (bad(p.new_copy, true) || p.new_copy.dtype == DType::f32))
    return "new_copy is f16 or bf16, contiguous, of the weight's count (" + p.new_copy.str() + ")";
  if (!(p.hyper.lr >= 0) || p.hyper.step < 1) return "needs lr >= 0 and step >= 1";
  return std::nullopt;
}

void optimizer_reference(const OptimizerProblem& p) {
  if (auto error = optimizer_problem_error(p)) throw std::invalid_argument("optimizer_reference: " + *error);
  const OptimizerHyper& h = p.hyper;
  const double bc1 = 1 - std::pow(double(h.beta1), h.step), bc2 = 1 - std::pow(double(h.beta2), h.step);
  const std::int64_t count = p.weight.numel();
  for (std::int64_t i = 0; i < count; ++i) {
    double w = p.weight.ptr<float>()[i];
    const double g = p.grad.ptr<float>()[i];
    if (p.optimizer == Optimizer::sgd) {
      w -= double(h.lr) * g;
    } else if (p.optimizer == Optimizer::sgd_momentum) {
      const double b = double(h.momentum) * p.m.ptr<float>()[i] + g;
      w -= double(h.lr) * b;
      p.new_m.ptr<float>()[i] = float(b);
    } else {
      w *= 1 - double(h.lr) * h.weight_decay;
      const double m = double(h.beta1) * p.m.ptr<float>()[i] + (1 - double(h.beta1)) * g;
      const double v = double(h.beta2) * p.v.ptr<float>()[i] + (1 - double(h.beta2)) * g * g;
      w -= double(h.lr) * (m / bc1) / (std::sqrt(v / bc2) + h.eps);
      p.new_m.ptr<float>()[i] = float(m);
      p.new_v.ptr<float>()[i] = float(v);
    }
    p.new_weight.ptr<float>()[i] = float(w);
    if (p.has_copy)
      store_element(static_cast<unsigned char*>(p.new_copy.element_data()) + i * 2, p.new_copy.dtype, double(float(w)));
  }
}

namespace {

void update(const OptimizerProblem& p);

void optimizer_plain(const OptimizerProblem& p, Stream) {
  update(p);
  if (p.has_copy) best_cpu_convert_variant(p.new_copy.dtype).prepare({p.new_copy, p.new_weight})(nullptr);
}

void update(const OptimizerProblem& p) {
  const auto count = std::size_t(p.weight.numel());
  const float* w = p.weight.ptr<float>();
  const float* g = p.grad.ptr<float>();
  float* out = p.new_weight.ptr<float>();
  if (p.optimizer == Optimizer::sgd) {
    const float lr = p.hyper.lr;
    parallel_chunks(count, 16, 1 << 14, [&](std::size_t begin, std::size_t n) {
      for (std::size_t i = begin; i < begin + n; ++i) {
        out[i] = w[i] - lr * g[i];
      }
    });
    return;
  }
  if (p.optimizer == Optimizer::sgd_momentum) {
    const float lr = p.hyper.lr, mu = p.hyper.momentum;
    const float* b = p.m.ptr<float>();
    float* new_b = p.new_m.ptr<float>();
    parallel_chunks(count, 16, 1 << 14, [&](std::size_t begin, std::size_t n) {
      for (std::size_t i = begin; i < begin + n; ++i) {
        new_b[i] = mu * b[i] + g[i];
        out[i] = w[i] - lr * new_b[i];
      }
    });
    return;
  }
  const AdamWConstants c = adamw_constants(p.hyper);
  const float *m = p.m.ptr<float>(), *v = p.v.ptr<float>();
  float *new_m = p.new_m.ptr<float>(), *new_v = p.new_v.ptr<float>();
  parallel_chunks(count, 16, 1 << 14, [&](std::size_t begin, std::size_t n) {
#pragma omp simd
    for (std::size_t i = begin; i < begin + n; ++i) {
      const float mi = c.b1 * m[i] + c.c1 * g[i];
      const float vi = c.b2 * v[i] + c.c2 * (g[i] * g[i]);
      new_m[i] = mi;
      new_v[i] = vi;
      out[i] = w[i] * c.decay - c.step_size * mi / (std::sqrt(vi) * c.inv_sqrt_bc2 + c.eps);
    }
  });
}

std::optional<std::string> checked(const OptimizerProblem& p) { return optimizer_problem_error(p); }

constexpr OptimizerVariant kVariants[] = {
    {"plain", "one OpenMP pass over the elements, f32 arithmetic with folded constants", Device::Kind::cpu, checked,
     direct<OptimizerProblem, optimizer_plain>, nullptr, {}, Role::own, {.speed = 1}},
};

}  // namespace

std::span<const OptimizerVariant> cpu_optimizer_variants() { return kVariants; }

}  // namespace flopscope::kernels
