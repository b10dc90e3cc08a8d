// Optimizer steps on a CUDA device (optimizer.hpp): one thread per element in a grid-stride loop,
// f32 arithmetic with the same folded constants as the CPU (adamw_constants), the narrow copy
// rounded to nearest even by the toolkit's intrinsics (overflow to inf, as encode_bits).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "flopscope/kernels/optimizer.hpp"
#include "launch.cuh"

namespace flopscope::kernels {

namespace {

constexpr int kThreads = 256;

// Copy: 0 none, 1 f16, 2 bf16.
template <int Copy>
__device__ void store_copy(void* copy, std::int64_t i, float w) {
  if constexpr (Copy == 1) static_cast<__half*>(copy)[i] = __float2half_rn(w);
  if constexpr (Copy == 2) static_cast<__nv_bfloat16*>(copy)[i] = __float2bfloat16_rn(w);
}

template <int Copy>
__global__ void sgd_kernel(const float* __restrict__ w, const float* __restrict__ g, float* __restrict__ out,
                           void* copy, float lr, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float updated = w[i] - lr * g[i];
    out[i] = updated;
    store_copy<Copy>(copy, i, updated);
  }
}

template <int Copy>
__global__ void momentum_kernel(const float* __restrict__ w, const float* __restrict__ g, const float* __restrict__ b,
                                float* __restrict__ out, float* __restrict__ new_b, void* copy, float lr, float mu,
                                std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float bi = mu * b[i] + g[i];
    new_b[i] = bi;
    const float updated = w[i] - lr * bi;
    out[i] = updated;
    store_copy<Copy>(copy, i, updated);
  }
}

template <int Copy>
__global__ void adamw_kernel(const float* __restrict__ w, const float* __restrict__ g, const float* __restrict__ m,
                             const float* __restrict__ v, float* __restrict__ out, float* __restrict__ new_m,
                             float* __restrict__ new_v, void* copy, AdamWConstants c, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = c.b1 * m[i] + c.c1 * gi;
    const float vi = c.b2 * v[i] + c.c2 * (gi * gi);
    new_m[i] = mi;
    new_v[i] = vi;
    const float updated = w[i] * c.decay - c.step_size * mi / (sqrtf(vi) * c.inv_sqrt_bc2 + c.eps);
    out[i] = updated;
    store_copy<Copy>(copy, i, updated);
  }
}

template <int Copy>
void launch(const OptimizerProblem& p, cudaStream_t stream) {
  const std::int64_t count = p.weight.numel();
  if (count == 0) return;
  const unsigned grid = grid_blocks(count, kThreads);
  void* copy = p.has_copy ? p.new_copy.element_data() : nullptr;
  if (p.optimizer == Optimizer::sgd)
    sgd_kernel<Copy><<<grid, kThreads, 0, stream>>>(p.weight.ptr<float>(), p.grad.ptr<float>(),
                                                     p.new_weight.ptr<float>(), copy, p.hyper.lr, count);
  else if (p.optimizer == Optimizer::sgd_momentum)
    momentum_kernel<Copy><<<grid, kThreads, 0, stream>>>(p.weight.ptr<float>(), p.grad.ptr<float>(), p.m.ptr<float>(),
                                                          p.new_weight.ptr<float>(), p.new_m.ptr<float>(), copy,
                                                          p.hyper.lr, p.hyper.momentum, count);
  else
    adamw_kernel<Copy><<<grid, kThreads, 0, stream>>>(p.weight.ptr<float>(), p.grad.ptr<float>(), p.m.ptr<float>(),
                                                       p.v.ptr<float>(), p.new_weight.ptr<float>(),
                                                       p.new_m.ptr<float>(), p.new_v.ptr<float>(), copy,
                                                       adamw_constants(p.hyper), count);
}

void optimizer_cuda(const OptimizerProblem& p, Stream stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (!p.has_copy) launch<0>(p, s);
  else if (p.new_copy.dtype == DType::f16) launch<1>(p, s);
  else launch<2>(p, s);
}

std::optional<std::string> checked(const OptimizerProblem& p) { return optimizer_problem_error(p); }

constexpr OptimizerVariant kVariants[] = {
    {"plain", "one thread per element (grid-stride), f32 arithmetic with folded constants", Device::Kind::cuda,
     checked, direct<OptimizerProblem, optimizer_cuda>, nullptr, {}, Role::own, {.speed = 1}},
};

}  // namespace

std::span<const OptimizerVariant> cuda_optimizer_variants() { return kVariants; }

}  // namespace flopscope::kernels
