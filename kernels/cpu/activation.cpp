// GELU forward and backward on the CPU (activation.hpp), and the problem check and reference that
// every device's variants share.
//
// Variant:
//   plain  one OpenMP pass, in the operands' own type (f32 or f64), tanh from <cmath>.
#include <cmath>
#include <string>

#include "flopscope/kernels/activation.hpp"
#include "parallel.hpp"

namespace flopscope::kernels {

namespace {

constexpr double kC = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kA = 0.044715;

template <class T>
T gelu(T x) {
  const T t = std::tanh(T(kC) * (x + T(kA) * x * x * x));
  return T(0.5) * x * (1 + t);
}

template <class T>
T gelu_grad(T x, T grad) {
  const T t = std::tanh(T(kC) * (x + T(kA) * x * x * x));
  return grad * (T(0.5) * (1 + t) + T(0.5) * x * (1 - t * t) * T(kC) * (1 + T(3 * kA) * x * x));
}

template <class T>
void run(const GeluProblem& p) {
  T* out = p.out.ptr<T>();
  const T* x = p.x.ptr<T>();
  const T* grad = p.backward ? p.grad.ptr<T>() : nullptr;
  parallel_chunks(std::size_t(p.out.numel()), 16, 1 << 12, [&](std::size_t begin, std::size_t n) {
    for (std::size_t i = begin; i < begin + n; ++i) out[i] = grad ? gelu_grad(x[i], grad[i]) : gelu(x[i]);
  });
}

void gelu_plain(const GeluProblem& p, Stream) {
  if (p.out.dtype == DType::f64) run<double>(p);
  else run<float>(p);
}

std::optional<std::string> checked(const GeluProblem& p) { return gelu_problem_error(p); }

constexpr GeluVariant kVariants[] = {
    {"plain", "one OpenMP pass in the operands' type, tanh from <cmath>", Device::Kind::cpu, checked,
     direct<GeluProblem, gelu_plain>},
};

}  // namespace

std::optional<std::string> gelu_problem_error(const GeluProblem& p) {
  if (p.out.dtype != DType::f32 && p.out.dtype != DType::f64) return std::string("GELU runs in f32 or f64");
  const auto bad = [&](const TensorRef& t) {
    return t.dtype != p.out.dtype || !t.is_contiguous() || t.numel() != p.out.numel();
  };
  if (!p.out.is_contiguous() || bad(p.x) || (p.backward && bad(p.grad)))
    return "needs contiguous out, x" + std::string(p.backward ? " and grad" : "") + " of one dtype and count (" +
           p.x.str() + ")";
  return std::nullopt;
}

void gelu_reference(const GeluProblem& p) {
  if (auto error = gelu_problem_error(p)) throw std::invalid_argument("gelu_reference: " + *error);
  const auto value = [](const TensorRef& t, std::int64_t i) {
    return t.dtype == DType::f64 ? t.ptr<double>()[i] : double(t.ptr<float>()[i]);
  };
  for (std::int64_t i = 0; i < p.out.numel(); ++i) {
    const double y = p.backward ? gelu_grad(value(p.x, i), value(p.grad, i)) : gelu(value(p.x, i));
    if (p.out.dtype == DType::f64) p.out.ptr<double>()[i] = y;
    else p.out.ptr<float>()[i] = float(y);
  }
}

std::span<const GeluVariant> cpu_gelu_variants() { return kVariants; }

}  // namespace flopscope::kernels
