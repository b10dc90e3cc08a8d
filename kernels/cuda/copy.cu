// Contiguous copy on a CUDA device.
//
// Variants:
//   memcpy_async  cudaMemcpyAsync device to device: the vendor's copy; the baseline.
//   vec16         own grid-stride kernel, 16-byte (uint4) loads and stores on the aligned body,
//                 byte-wise head and tail; grid = 8 blocks of 256 threads per SM, so
//                 every SM has enough loads in flight.
#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "flopscope/kernels/copy.hpp"

namespace flopscope::kernels {

namespace {

__global__ void copy_bytes_kernel(unsigned char* __restrict__ out, const unsigned char* __restrict__ in,
                                  std::size_t bytes) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < bytes;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void copy_vec16_kernel(uint4* __restrict__ out, const uint4* __restrict__ in, std::size_t vectors) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < vectors;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

int grid_size() {
  static const int blocks = [] {
    int device = 0, sms = 1;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return sms * 8;
  }();
  return blocks;
}

std::size_t bytes_of(const CopyProblem& p) { return std::size_t(p.src.numel()) * p.src.element_size(); }

void copy_memcpy_async(const CopyProblem& p, Stream stream) {
  cudaMemcpyAsync(p.dst.element_data(), p.src.element_data(), bytes_of(p), cudaMemcpyDeviceToDevice,
                  static_cast<cudaStream_t>(stream));
}

void copy_vec16(const CopyProblem& p, Stream stream) {
  auto* out = p.dst.ptr<unsigned char>();
  const auto* in = p.src.ptr<unsigned char>();
  const std::size_t bytes = bytes_of(p);
  if (bytes == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const auto out_address = reinterpret_cast<std::uintptr_t>(out);
  const auto in_address = reinterpret_cast<std::uintptr_t>(in);
  constexpr int threads = 256;
  if ((out_address & 15) != (in_address & 15)) {  // never both aligned: bytes only
    copy_bytes_kernel<<<grid_size(), threads, 0, s>>>(out, in, bytes);
    return;
  }
  std::size_t head = std::min(bytes, (16 - (out_address & 15)) & 15);
  std::size_t vectors = (bytes - head) / 16;
  std::size_t tail = bytes - head - vectors * 16;
  if (head) copy_bytes_kernel<<<1, threads, 0, s>>>(out, in, head);
  if (vectors)
    copy_vec16_kernel<<<grid_size(), threads, 0, s>>>(reinterpret_cast<uint4*>(out + head),
                                                      reinterpret_cast<const uint4*>(in + head), vectors);
  if (tail) copy_bytes_kernel<<<1, threads, 0, s>>>(out + head + vectors * 16, in + head + vectors * 16, tail);
}

constexpr std::array<CopyVariant, 2> kVariants = {{
    {"memcpy_async", "cudaMemcpyAsync device to device (baseline)", Device::Kind::cuda, needs_contiguous,
     direct<CopyProblem, copy_memcpy_async>},
    {"vec16", "grid-stride kernel, 16-byte loads and stores", Device::Kind::cuda, needs_contiguous,
     direct<CopyProblem, copy_vec16>},
}};

}  // namespace

std::span<const CopyVariant> cuda_copy_variants() { return kVariants; }

}  // namespace flopscope::kernels
