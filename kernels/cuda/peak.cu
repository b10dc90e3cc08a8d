// Ceilings on a CUDA device (bench_peak).
//
//   fma_peak_f32 / f64  kCudaPeakChains independent FMA chains per thread, full grid: the
//                       CUDA-core FMA rate.
//   triad_f32           STREAM triad a = b + s*c, grid-stride, float4 accesses: bandwidth.
// (The tensor-core ceilings are GEMMs of the matmul family's cublaslt variant: cuda/matmul.cu.)
#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "flopscope/kernels/hash.hpp"
#include "flopscope/kernels/peak.hpp"

namespace flopscope::kernels {

namespace {

// Chain c starts at start + c (distinct chains: equal ones would be merged). The trip loop is
// unrolled 32 times: 256 FFMA per 3 loop instructions (counter, compare, branch), 1.2% overhead;
// unrolled 4 times (nvcc's choice) the overhead capped the rate at ~91% of peak. Each thread
// writes its chain 0; the other chains are kept alive by adding them times 0 (not folded away
// without fast math), so every thread's value is fma_chain_reference's.
template <typename T>
__global__ void fma_chains_kernel(double* out, std::uint64_t trips, T start, T a, T b) {
  T acc[kCudaPeakChains];
#pragma unroll
  for (int c = 0; c < kCudaPeakChains; ++c) acc[c] = start + T(c);
  std::uint64_t t = 0;
#pragma unroll 32
  for (; t < trips; ++t) {
#pragma unroll
    for (int c = 0; c < kCudaPeakChains; ++c) acc[c] = fma(acc[c], a, b);
  }
  T kept = acc[0];
#pragma unroll
  for (int c = 1; c < kCudaPeakChains; ++c) kept += acc[c] * T(0);
  out[blockIdx.x * std::size_t(blockDim.x) + threadIdx.x] = double(kept);
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
void run_chains(const FmaChainProblem& p, Stream stream) {
  const auto threads = static_cast<std::size_t>(p.out.numel());
  const unsigned int blocks = static_cast<unsigned int>(threads / kCudaPeakThreadsPerBlock);
  fma_chains_kernel<T><<<blocks, kCudaPeakThreadsPerBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      p.out.ptr<double>(), p.trips, T(p.start), T(p.a), T(p.b));
}

std::optional<std::string> whole_blocks(const FmaChainProblem& p) {
  if (p.out.dtype != DType::f64 || !p.out.is_contiguous() || p.out.numel() < 1 ||
      p.out.numel() % kCudaPeakThreadsPerBlock != 0)
    return "needs a contiguous f64 output of one value per thread, whole blocks of " +
           std::to_string(kCudaPeakThreadsPerBlock) + ", not " + p.out.str();
  return std::nullopt;
}

template <ComputeMode Mode>
bool computes(const FmaChainProblem& p) {
  return p.mode == Mode;
}

const std::array<FmaChainVariant, 2> kChains = {{
    {"fma", "8 FFMA chains per thread on every CUDA core, trip loop unrolled 32 times", Device::Kind::cuda, whole_blocks,
     direct<FmaChainProblem, run_chains<float>>, computes<ComputeMode::f32>,
     {"FFMA", ComputeMode::f32, kCudaPeakChains, 1, 2}},
    {"fma", "8 DFMA chains per thread on every FP64 unit, trip loop unrolled 32 times", Device::Kind::cuda,
     whole_blocks, direct<FmaChainProblem, run_chains<double>>, computes<ComputeMode::f64>,
     {"DFMA", ComputeMode::f64, kCudaPeakChains, 1, 2}},
}};

void triad_cuda(const TriadProblem& p, Stream stream) {
  auto s = static_cast<cudaStream_t>(stream);
  float* a = p.a.ptr<float>();
  const float *b = p.b.ptr<float>(), *c = p.c.ptr<float>();
  const auto count = static_cast<std::size_t>(p.a.numel());
  const auto scalar = static_cast<float>(p.scalar);
  std::size_t vectors = count / 4;  // the harness's buffers are 256-byte aligned
  int device = 0, sms = 1;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (vectors)
    triad_kernel<<<sms * 8, 256, 0, s>>>(reinterpret_cast<float4*>(a), reinterpret_cast<const float4*>(b),
                                         reinterpret_cast<const float4*>(c), scalar, vectors);
  if (count % 4) triad_tail_kernel<<<1, 4, 0, s>>>(a, b, c, scalar, vectors * 4, count);
}

std::optional<std::string> triad_f32_aligned(const TriadProblem& p) {
  for (const TensorRef* t : {&p.a, &p.b, &p.c})
    if (t->dtype != DType::f32 || !t->is_contiguous() || t->numel() != p.a.numel() ||
        reinterpret_cast<std::uintptr_t>(t->element_data()) % 16 != 0)
      return "needs contiguous, 16-byte aligned f32 operands of one size, not " + t->str();
  return std::nullopt;
}

const std::array<TriadVariant, 1> kTriad = {{
    {"triad", "a = b + s*c on f32, grid-stride, float4 accesses", Device::Kind::cuda, triad_f32_aligned,
     direct<TriadProblem, triad_cuda>},
}};

}  // namespace

std::span<const FmaChainVariant> cuda_fma_chain_variants() { return kChains; }
std::span<const TriadVariant> cuda_triad_variants() { return kTriad; }


}  // namespace flopscope::kernels
