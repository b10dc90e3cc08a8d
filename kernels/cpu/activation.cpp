// GELU forward and backward on the CPU (activation.hpp), and the problem check and reference that
// every device's variants share.
//
// Variant:
//   plain  one OpenMP pass, in the operands' own type. f32 in vector arithmetic (no libm call, so
//          the compiler vectorizes it; AVX-512, AVX2 or SSE2 clones chosen at load time): with
//          s = sigmoid(2u) = 1 / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3), tanh(u) = 2s - 1,
//          so gelu(x) = x s and gelu'(x) = s + 2 x s (1 - s) u'(x), 1 - s = s e^-2u: no
//          cancellation where x is very negative (tanh's 1 + t is), e^x by exp_f32 below.
//          f64 by tanh from <cmath>, as the reference.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
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

// e^x in f32 arithmetic that vectorizes: x clamped to [-87, 88] (a NaN stays NaN), x = n ln2 + r
// with n rounded to nearest by the 1.5 * 2^23 shift and |r| <= ln2 / 2 (ln2 in two parts, Cody and
// Waite), e^r by its Taylor polynomial to r^7 (truncation below 1.2e-7 relative), 2^n written
// into the exponent bits.
inline float exp_f32(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float poly = 1.0f / 5040;
  for (float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f}) poly = poly * r + c;
  const std::int32_t exponent = std::bit_cast<std::int32_t>(shifted) - 0x4B400000 + 127;
  return poly * std::bit_cast<float>(exponent << 23);
}

// GELU forward and backward over f32 spans, in clones per ISA (the loop vectorizes in each).
__attribute__((target_clones("avx512f", "avx2", "default")))
void gelu_f32(float* out, const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i], minus_2u = -2.0f * float(kC) * (v + float(kA) * v * v * v);
    // Past e^88 the sigmoid is 0 (exp_f32 clamps its argument; 1 / (1 + e^88) times a very
    // negative x would not be).
    out[i] = minus_2u > 88.0f ? v * 0.0f : v / (1.0f + exp_f32(minus_2u));
  }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void gelu_grad_f32(float* out, const float* x, const float* grad, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i], minus_2u = -2.0f * float(kC) * (v + float(kA) * v * v * v);
    const float e = exp_f32(minus_2u), s = minus_2u > 88.0f ? 0.0f : 1.0f / (1.0f + e);
    // s (1 - s) = s * e is below 1e-260 past |x| = 20, so the derivative's second term is 0 there;
    // x clamped to +-20 in it keeps x u'(x) from overflowing to inf (times that 0: NaN).
    const float w = std::min(std::max(v, -20.0f), 20.0f);
    const float du = float(kC) * (1.0f + float(3 * kA) * w * w);
    out[i] = grad[i] * (s + 2.0f * w * s * (s * e) * du);
  }
}

void gelu_plain(const GeluProblem& p, Stream) {
  const auto n = std::size_t(p.out.numel());
  if (p.out.dtype == DType::f64) {
    double* out = p.out.ptr<double>();
    const double* x = p.x.ptr<double>();
    const double* grad = p.backward ? p.grad.ptr<double>() : nullptr;
    parallel_chunks(n, 16, 1 << 12, [&](std::size_t begin, std::size_t count) {
      for (std::size_t i = begin; i < begin + count; ++i) out[i] = grad ? gelu_grad(x[i], grad[i]) : gelu(x[i]);
    });
    return;
  }
  float* out = p.out.ptr<float>();
  const float* x = p.x.ptr<float>();
  const float* grad = p.backward ? p.grad.ptr<float>() : nullptr;
  parallel_chunks(n, 16, 1 << 12, [&](std::size_t begin, std::size_t count) {
    if (grad) gelu_grad_f32(out + begin, x + begin, grad + begin, count);
    else gelu_f32(out + begin, x + begin, count);
  });
}

std::optional<std::string> checked(const GeluProblem& p) { return gelu_problem_error(p); }

constexpr GeluVariant kVariants[] = {
    {"plain", "one OpenMP pass in the operands' type: f32 vectorized (sigmoid form, own exp), f64 by <cmath>'s tanh",
     Device::Kind::cpu, checked,
     direct<GeluProblem, gelu_plain>, nullptr, {}, Role::own, {.speed = 1}},
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
  const std::int64_t n = p.out.numel();
#pragma omp parallel for schedule(static) if (n >= (std::int64_t{1} << 15))
  for (std::int64_t i = 0; i < n; ++i) {
    const double y = p.backward ? gelu_grad(value(p.x, i), value(p.grad, i)) : gelu(value(p.x, i));
    if (p.out.dtype == DType::f64) p.out.ptr<double>()[i] = y;
    else p.out.ptr<float>()[i] = float(y);
  }
}

std::span<const GeluVariant> cpu_gelu_variants() { return kVariants; }

}  // namespace flopscope::kernels
