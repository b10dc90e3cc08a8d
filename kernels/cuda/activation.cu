// GELU forward and backward on a CUDA device (activation.hpp): one thread per element in a
// grid-stride loop (32-bit index math where every index fits), in the operands' type (f32 or
// f64), tanhf / tanh.
#include <cuda_runtime.h>

#include <cstdint>

#include "flopscope/kernels/activation.hpp"
#include "flopscope/kernels/index_width.hpp"
#include "launch.cuh"

namespace flopscope::kernels {

namespace {

constexpr int kThreads = 256;

template <class T, class Index>
__global__ void gelu_kernel(T* __restrict__ out, const T* __restrict__ x, const T* __restrict__ grad, Index count) {
  const T c = T(0.7978845608028654), a = T(0.044715);
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); i < count;
       i += Index(gridDim.x) * Index(blockDim.x)) {
    const T v = x[i];
    const T t = tanh(c * (v + a * v * v * v));
    out[i] = grad ? grad[i] * (T(0.5) * (1 + t) + T(0.5) * v * (1 - t * t) * c * (1 + 3 * a * v * v))
                  : T(0.5) * v * (1 + t);
  }
}

template <class T>
void launch(const GeluProblem& p, cudaStream_t stream) {
  const std::int64_t count = p.out.numel();
  if (count == 0) return;
  const unsigned blocks = grid_blocks(count, kThreads);
  const T* grad = p.backward ? p.grad.ptr<T>() : nullptr;
  if (fits_int32(count, std::int64_t(blocks) * kThreads, count))
    gelu_kernel<T, std::int32_t><<<blocks, kThreads, 0, stream>>>(p.out.ptr<T>(), p.x.ptr<T>(), grad, std::int32_t(count));
  else
    gelu_kernel<T, std::int64_t><<<blocks, kThreads, 0, stream>>>(p.out.ptr<T>(), p.x.ptr<T>(), grad, count);
}

void gelu_cuda(const GeluProblem& p, Stream stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (p.out.dtype == DType::f64) launch<double>(p, s);
  else launch<float>(p, s);
}

std::optional<std::string> checked(const GeluProblem& p) { return gelu_problem_error(p); }

constexpr GeluVariant kVariants[] = {
    {"plain", "one thread per element (grid-stride), in the operands' type", Device::Kind::cuda, checked,
     direct<GeluProblem, gelu_cuda>, nullptr, {}, Role::own, {.speed = 1}},
};

}  // namespace

std::span<const GeluVariant> cuda_gelu_variants() { return kVariants; }

}  // namespace flopscope::kernels
