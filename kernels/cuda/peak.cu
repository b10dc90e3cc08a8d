// Ceilings on a CUDA device (bench_peak).
//
//   fma_peak_f32 / f64  kCudaPeakChains independent FMA chains per thread, full grid: the
//                       CUDA-core FMA rate.
//   triad_f32           STREAM triad a = b + s*c, grid-stride, float4 accesses: bandwidth.
//   gemm_* (cuBLASLt)   large GEMMs on the tensor cores: tf32 (f32 storage, TF32 math), f16,
//                       bf16 and fp8 (e4m3/e5m2, sm_89+), f32 accumulate and output, "TN"
//                       layout (A transposed), which fp8 requires and the others accept.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <string>

#include "flopscope/kernels/hash.hpp"
#include "flopscope/kernels/peak.hpp"

namespace flopscope::kernels::cuda {

namespace {

template <typename T>
__global__ void fma_chains_kernel(T* out, int trips, T a, T b) {
  T acc[kCudaPeakChains];
#pragma unroll
  for (int c = 0; c < kCudaPeakChains; ++c) acc[c] = T(threadIdx.x % 7 + c) * T(0.001);
  for (int t = 0; t < trips; ++t) {
#pragma unroll
    for (int c = 0; c < kCudaPeakChains; ++c) acc[c] = fma(acc[c], a, b);
  }
  T sum = 0;
#pragma unroll
  for (int c = 0; c < kCudaPeakChains; ++c) sum += acc[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void triad_kernel(float4* a, const float4* b, const float4* c, float s, std::size_t vectors) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < vectors;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void triad_tail_kernel(float* a, const float* b, const float* c, float s, std::size_t begin,
                                  std::size_t count) {
  std::size_t i = begin + threadIdx.x;
  if (i < count) a[i] = b[i] + s * c[i];
}

template <typename T>
__global__ void fill_small_kernel(T* data, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    data[i] = T(small_integer(i, seed));
}

std::string status_string(cublasStatus_t status) {
  return std::string(cublasLtGetStatusName(status)) + " (" + cublasLtGetStatusString(status) + ")";
}

}  // namespace

double fma_peak_f32(float* out, int blocks, int threads, int trips, float a, float b, void* stream) {
  fma_chains_kernel<float><<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(out, trips, a, b);
  return 2.0 * kCudaPeakChains * double(trips) * blocks * threads;
}

double fma_peak_f64(double* out, int blocks, int threads, int trips, double a, double b, void* stream) {
  fma_chains_kernel<double><<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(out, trips, a, b);
  return 2.0 * kCudaPeakChains * double(trips) * blocks * threads;
}

void triad_f32(float* a, const float* b, const float* c, float scalar, std::size_t count, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  std::size_t vectors = count / 4;  // cudaMalloc'd buffers are 256-byte aligned
  int device = 0, sms = 1;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (vectors)
    triad_kernel<<<sms * 8, 256, 0, s>>>(reinterpret_cast<float4*>(a), reinterpret_cast<const float4*>(b),
                                         reinterpret_cast<const float4*>(c), scalar, vectors);
  if (count % 4) triad_tail_kernel<<<1, 4, 0, s>>>(a, b, c, scalar, vectors * 4, count);
}

void fill_small_integers(void* data, std::string_view dtype, std::size_t count, std::uint64_t seed) {
  if (dtype == "tf32" || dtype == "f32")
    fill_small_kernel<float><<<1024, 256>>>(static_cast<float*>(data), count, seed);
  else if (dtype == "f16")
    fill_small_kernel<__half><<<1024, 256>>>(static_cast<__half*>(data), count, seed);
  else if (dtype == "bf16")
    fill_small_kernel<__nv_bfloat16><<<1024, 256>>>(static_cast<__nv_bfloat16*>(data), count, seed);
  else if (dtype == "f8e4m3")
    fill_small_kernel<__nv_fp8_e4m3><<<1024, 256>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed);
  else if (dtype == "f8e5m2")
    fill_small_kernel<__nv_fp8_e5m2><<<1024, 256>>>(static_cast<__nv_fp8_e5m2*>(data), count, seed);
}

struct GemmPlan {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  void* workspace = nullptr;
  std::size_t workspace_bytes = std::size_t{64} << 20;
};

void gemm_plan_destroy(GemmPlan* plan) {
  if (!plan) return;
  if (plan->preference) cublasLtMatmulPreferenceDestroy(plan->preference);
  if (plan->a) cublasLtMatrixLayoutDestroy(plan->a);
  if (plan->b) cublasLtMatrixLayoutDestroy(plan->b);
  if (plan->d) cublasLtMatrixLayoutDestroy(plan->d);
  if (plan->op) cublasLtMatmulDescDestroy(plan->op);
  if (plan->handle) cublasLtDestroy(plan->handle);
  cudaFree(plan->workspace);
  delete plan;
}

GemmPlan* gemm_plan_create(std::string_view dtype, int m, int n, int k, std::string* error) {
  cudaDataType_t input;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (dtype == "tf32") {
    input = CUDA_R_32F;
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  } else if (dtype == "f16") {
    input = CUDA_R_16F;
  } else if (dtype == "bf16") {
    input = CUDA_R_16BF;
  } else if (dtype == "f8e4m3") {
    input = CUDA_R_8F_E4M3;
  } else if (dtype == "f8e5m2") {
    input = CUDA_R_8F_E5M2;
  } else {
    *error = "no GEMM for dtype " + std::string(dtype);
    return nullptr;
  }
  auto* plan = new GemmPlan;
  auto check = [&](cublasStatus_t status, const char* what) {
    if (status == CUBLAS_STATUS_SUCCESS) return true;
    *error = std::string(what) + ": " + status_string(status);
    return false;
  };
  const cublasOperation_t transpose = CUBLAS_OP_T, no_transpose = CUBLAS_OP_N;
  bool ok = check(cublasLtCreate(&plan->handle), "cublasLtCreate") &&
            check(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate") &&
            check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
                  "TRANSA") &&
            check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose,
                                                 sizeof no_transpose),
                  "TRANSB") &&
            // A is stored k x m (column-major, transposed in the op), B k x n, D m x n.
            check(cublasLtMatrixLayoutCreate(&plan->a, input, k, m, k), "layout A") &&
            check(cublasLtMatrixLayoutCreate(&plan->b, input, k, n, k), "layout B") &&
            check(cublasLtMatrixLayoutCreate(&plan->d, CUDA_R_32F, m, n, m), "layout D") &&
            check(cublasLtMatmulPreferenceCreate(&plan->preference), "preference") &&
            check(cublasLtMatmulPreferenceSetAttribute(plan->preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &plan->workspace_bytes, sizeof plan->workspace_bytes),
                  "workspace preference");
  if (ok && cudaMalloc(&plan->workspace, plan->workspace_bytes) != cudaSuccess) {
    cudaGetLastError();
    *error = "cudaMalloc of the cuBLASLt workspace failed";
    ok = false;
  }
  if (ok) {
    int found = 0;
    ok = check(cublasLtMatmulAlgoGetHeuristic(plan->handle, plan->op, plan->a, plan->b, plan->d, plan->d,
                                              plan->preference, 1, &plan->heuristic, &found),
               "cublasLtMatmulAlgoGetHeuristic");
    if (ok && found == 0) {
      *error = "cuBLASLt has no algorithm for " + std::string(dtype) + " on this GPU";
      ok = false;
    }
  }
  if (!ok) {
    gemm_plan_destroy(plan);
    return nullptr;
  }
  return plan;
}

std::string gemm_run(GemmPlan* plan, const void* a, const void* b, float* d, void* stream) {
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t status =
      cublasLtMatmul(plan->handle, plan->op, &alpha, a, plan->a, b, plan->b, &beta, d, plan->d, d, plan->d,
                     &plan->heuristic.algo, plan->workspace, plan->workspace_bytes, static_cast<cudaStream_t>(stream));
  return status == CUBLAS_STATUS_SUCCESS ? std::string() : "cublasLtMatmul: " + status_string(status);
}

}  // namespace flopscope::kernels::cuda
