// Elementwise binary ops on broadcast operands on a CUDA device (broadcast.hpp): out = a + b, a * b,
// computed in f32 (f64 for f64); f16 and bf16 loaded narrow and rounded back to nearest even with
// the toolkit's intrinsics (cuda_fp16.h, cuda_bf16.h).
//
// Variants:
//   plain  one thread per output element (grid-stride), its index decoded over the plan's
//          dimensions (in 32 bits where every index fits), a and b read at their strides.
//   vec    one 16-byte vector of the output per thread (16 / element size elements) along the
//          plan's innermost dimension, a and b each loaded as one 16-byte vector (read
//          contiguously) or one element (repeated: the broadcast operand, from L1/L2); where the
//          rows are not whole aligned vectors or an operand is read at another stride, plain.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "flopscope/kernels/broadcast.hpp"
#include "flopscope/kernels/index_width.hpp"
#include "launch.cuh"

namespace flopscope::kernels {

namespace {

constexpr int kThreads = 256;

// Element types by their bits; C is what they are computed in.
struct F16 {
  unsigned short bits;
};
struct BF16 {
  unsigned short bits;
};

__device__ __forceinline__ float widen(F16 x) { return __half2float(__ushort_as_half(x.bits)); }
__device__ __forceinline__ float widen(BF16 x) { return __bfloat162float(__ushort_as_bfloat16(x.bits)); }
__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }

template <class T>
__device__ __forceinline__ T narrow(decltype(widen(T{})) x) {
  if constexpr (std::is_same_v<T, F16>) return {__half_as_ushort(__float2half_rn(x))};
  else if constexpr (std::is_same_v<T, BF16>) return {__bfloat16_as_ushort(__float2bfloat16_rn(x))};
  else return x;
}

template <BinaryOp Op, class C>
__device__ __forceinline__ C apply(C x, C y) {
  if constexpr (Op == BinaryOp::add) return x + y;
  else return x * y;
}

template <class T, BinaryOp Op>
__device__ __forceinline__ T combine(T x, T y) {
  return narrow<T>(apply<Op>(widen(x), widen(y)));
}

// A BinaryPlan with plain arrays (std::array's operator[] is host code).
struct DevicePlan {
  int dims;
  std::int64_t numel;
  std::int64_t sizes[kMaxDims], a_strides[kMaxDims], b_strides[kMaxDims];
};

DevicePlan device_plan(const BinaryPlan& plan) {
  DevicePlan d{plan.dims, plan.numel, {}, {}, {}};
  for (int i = 0; i < plan.dims; ++i) {
    d.sizes[i] = plan.sizes[i];
    d.a_strides[i] = plan.a_strides[i];
    d.b_strides[i] = plan.b_strides[i];
  }
  return d;
}

// ---- plain ----

// Index: int32 where every index fits (fits_int32), else int64.
template <class T, BinaryOp Op, class Index>
__global__ void plain_kernel(T* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, DevicePlan plan) {
  const Index numel = Index(plan.numel);
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); i < numel;
       i += Index(gridDim.x) * Index(blockDim.x)) {
    Index rest = i, a_offset = 0, b_offset = 0;
    for (int d = plan.dims - 1; d >= 0; --d) {
      const Index size = Index(plan.sizes[d]);
      const Index index = rest % size;
      rest /= size;
      a_offset += index * Index(plan.a_strides[d]);
      b_offset += index * Index(plan.b_strides[d]);
    }
    out[i] = combine<T, Op>(a[a_offset], b[b_offset]);
  }
}

// The largest element offset a plan reads through `strides` (a size-1 dimension's stride set to
// 0, so that it narrows to any index type).
std::int64_t largest_offset(DevicePlan& plan, std::int64_t* strides) {
  std::int64_t largest = 0;
  for (int d = 0; d < plan.dims; ++d) {
    if (plan.sizes[d] == 1) strides[d] = 0;
    largest += (plan.sizes[d] - 1) * strides[d];
  }
  return largest;
}

// ---- vec ----

template <class T>
union Pack16 {
  uint4 vector;
  T elements[16 / sizeof(T)];
};

// AS, BS: the operands' steps along the innermost dimension, 0 or 1.
template <class T, BinaryOp Op, int AS, int BS>
__global__ void vec_kernel(uint4* __restrict__ out, const T* __restrict__ a, const T* __restrict__ b, DevicePlan plan) {
  constexpr int vec = 16 / sizeof(T);
  const int inner = plan.dims - 1;
  const std::int64_t row_vectors = plan.sizes[inner] / vec, vectors = plan.numel / vec;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < vectors;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t row = i / row_vectors, a_offset = 0, b_offset = 0;
    const std::int64_t column = i % row_vectors * vec;
    for (int d = inner - 1; d >= 0; --d) {
      const std::int64_t index = row % plan.sizes[d];
      row /= plan.sizes[d];
      a_offset += index * plan.a_strides[d];
      b_offset += index * plan.b_strides[d];
    }
    Pack16<T> x, y, z;
    if constexpr (AS == 1) x.vector = *reinterpret_cast<const uint4*>(a + a_offset + column);
    else for (int k = 0; k < vec; ++k) x.elements[k] = a[a_offset];
    if constexpr (BS == 1) y.vector = *reinterpret_cast<const uint4*>(b + b_offset + column);
    else for (int k = 0; k < vec; ++k) y.elements[k] = b[b_offset];
    for (int k = 0; k < vec; ++k) z.elements[k] = combine<T, Op>(x.elements[k], y.elements[k]);
    out[i] = z.vector;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

// Whether vec applies: whole 16-byte vectors per row, each operand stepping 0 or 1 along it, and
// every 16-byte load and store aligned.
bool vec_applies(const BinaryPlan& plan, const BinaryProblem& p) {
  const auto e = static_cast<std::int64_t>(p.out.element_size());
  const int inner = plan.dims - 1;
  if (inner < 0 || (plan.sizes[inner] * e) % 16 != 0 || !aligned16(p.out.element_data())) return false;
  auto operand_ok = [&](const TensorRef& t, const std::array<std::int64_t, kMaxDims>& strides) {
    if (strides[inner] == 0) return true;  // one element per row
    if (strides[inner] != 1 || !aligned16(t.element_data())) return false;
    for (int d = 0; d < inner; ++d)
      if ((strides[d] * e) % 16 != 0) return false;
    return true;
  };
  return operand_ok(p.a, plan.a_strides) && operand_ok(p.b, plan.b_strides);
}

template <class T, BinaryOp Op>
void run(const BinaryProblem& p, bool vectorized, cudaStream_t stream) {
  const BinaryPlan host_plan = plan_binary(p);
  if (host_plan.numel == 0) return;
  const DevicePlan plan = device_plan(host_plan);
  auto* out = static_cast<T*>(p.out.element_data());
  const auto* a = static_cast<const T*>(p.a.element_data());
  const auto* b = static_cast<const T*>(p.b.element_data());
  if (vectorized && vec_applies(host_plan, p)) {
    const int inner = plan.dims - 1;
    const std::int64_t vectors = plan.numel / (16 / std::int64_t(sizeof(T)));
    auto* out16 = reinterpret_cast<uint4*>(out);
    const bool as = plan.a_strides[inner] == 1, bs = plan.b_strides[inner] == 1;
    const unsigned grid = grid_blocks(vectors, kThreads);
    if (as && bs) vec_kernel<T, Op, 1, 1><<<grid, kThreads, 0, stream>>>(out16, a, b, plan);
    else if (as) vec_kernel<T, Op, 1, 0><<<grid, kThreads, 0, stream>>>(out16, a, b, plan);
    else if (bs) vec_kernel<T, Op, 0, 1><<<grid, kThreads, 0, stream>>>(out16, a, b, plan);
    else vec_kernel<T, Op, 0, 0><<<grid, kThreads, 0, stream>>>(out16, a, b, plan);
    return;
  }
  DevicePlan narrow = plan;
  const std::int64_t largest = std::max({largest_offset(narrow, narrow.a_strides), largest_offset(narrow, narrow.b_strides),
                                         plan.numel});
  const unsigned blocks = grid_blocks(plan.numel, kThreads);
  if (fits_int32(plan.numel, std::int64_t(blocks) * kThreads, largest))
    plain_kernel<T, Op, std::int32_t><<<blocks, kThreads, 0, stream>>>(out, a, b, narrow);
  else
    plain_kernel<T, Op, std::int64_t><<<blocks, kThreads, 0, stream>>>(out, a, b, narrow);
}

template <class T>
void run_op(const BinaryProblem& p, bool vectorized, cudaStream_t stream) {
  if (p.op == BinaryOp::add) run<T, BinaryOp::add>(p, vectorized, stream);
  else run<T, BinaryOp::mul>(p, vectorized, stream);
}

template <bool Vectorized>
void broadcast_cuda(const BinaryProblem& p, Stream stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (p.out.dtype) {
    case DType::f64: return run_op<double>(p, Vectorized, s);
    case DType::f32: return run_op<float>(p, Vectorized, s);
    case DType::f16: return run_op<F16>(p, Vectorized, s);
    case DType::bf16: return run_op<BF16>(p, Vectorized, s);
    default: throw std::invalid_argument("broadcast: no " + std::string(dtype_name(p.out.dtype)) + " kernel");
  }
}

constexpr std::array<BinaryVariant, 2> kVariants = {{
    {"plain", "one thread per output element, a and b read at their strides", Device::Kind::cuda,
     needs_broadcast_operands, direct<BinaryProblem, broadcast_cuda<false>>},
    {"vec", "16-byte vectors of the output per thread; broadcast operands one element, from cache", Device::Kind::cuda,
     needs_broadcast_operands, direct<BinaryProblem, broadcast_cuda<true>>},
}};

}  // namespace

std::span<const BinaryVariant> cuda_broadcast_variants() { return kVariants; }

}  // namespace flopscope::kernels
