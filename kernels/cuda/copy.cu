// Contiguous copy on a CUDA device.
//
// Variants:
//   memcpy_async  cudaMemcpyAsync device to device: the vendor's copy; the baseline.
//   vec16         own grid-stride kernel, 16-byte (uint4) loads and stores on the aligned body,
//                 4 independent loads in flight per thread (Note [copy: bytes in flight]),
//                 byte-wise head and tail; grid = up to 8 blocks of 256 threads per SM of the
//                 operands' device.
//   vec16_cs      vec16 with streaming stores (st.global.cs, __stcs: evict first), so that the
//                 destination does not push the source out of L2; added as the README's
//                 "Adding a variant" example: a template argument and one table row.
//
// Note [copy: bytes in flight]: by Little's law a memory system delivers bandwidth x latency
// bytes only when that many have been requested and not yet returned. During a copy an H200
// reads at up to 2.4 TB/s (half of its 4.8 TB/s; the other half is the writes), and a load on a
// busy memory system takes about 1 us to return: 2.4e12 B/s x 1e-6 s = 2.4 MB in flight, 18 KiB
// per SM (132 SMs). A thread that waits for its one 16-byte load before it asks for the next has
// 16 B in flight: 2048 threads per SM make 32 KiB only at full occupancy and only while every
// warp waits, which address arithmetic, stores and loop overhead interrupt, so the copy is held
// by latency, short of cudaMemcpyAsync. Four independent loads before the first store give each
// thread 64 B in flight (128 KiB per SM at full occupancy, several times the estimate): the
// copy is limited by DRAM, as cudaMemcpyAsync is.
#include <cuda_runtime.h>

#include <algorithm>
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

constexpr int kVectorsInFlight = 4;

// Grid-stride over 16-byte vectors, kVectorsInFlight of them per thread per step: the loads of
// one step (a stride apart, so each is coalesced across the warp) are all issued before the
// first store. The remainder (fewer than kVectorsInFlight strides) one vector at a time.
// kStreaming: stores marked evict-first (__stcs) instead of plain ones.
template <bool kStreaming>
__device__ void store16(uint4* p, uint4 v) {
  if constexpr (kStreaming) __stcs(p, v); else *p = v;
}

template <bool kStreaming>
__global__ void copy_vec16_kernel(uint4* __restrict__ out, const uint4* __restrict__ in, std::size_t vectors) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  for (; i + (kVectorsInFlight - 1) * stride < vectors; i += kVectorsInFlight * stride) {
    uint4 v[kVectorsInFlight];
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) v[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) store16<kStreaming>(&out[i + u * stride], v[u]);
  }
  for (; i < vectors; i += stride) store16<kStreaming>(&out[i], in[i]);
}

// Blocks for `work_items` threads' worth of work on `device`: up to 8 blocks of `threads` per SM
// (2048 threads, the SM's limit), fewer for small copies. The SM count is the device's own, read
// at every launch (a cheap attribute query): never one device's count for another.
unsigned int grid_size(int device, std::size_t work_items, int threads) {
  int sms = 1;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1) sms = 1;
  const std::size_t most = std::size_t(sms) * 8;
  const std::size_t needed = (work_items + threads - 1) / threads;
  return static_cast<unsigned int>(std::max<std::size_t>(1, std::min(most, needed)));
}

std::size_t bytes_of(const CopyProblem& p) { return std::size_t(p.src.numel()) * p.src.element_size(); }

void copy_memcpy_async(const CopyProblem& p, Stream stream) {
  cudaMemcpyAsync(p.dst.element_data(), p.src.element_data(), bytes_of(p), cudaMemcpyDeviceToDevice,
                  static_cast<cudaStream_t>(stream));
}

template <bool kStreaming>
void copy_vec16(const CopyProblem& p, Stream stream) {
  auto* out = p.dst.ptr<unsigned char>();
  const auto* in = p.src.ptr<unsigned char>();
  const std::size_t bytes = bytes_of(p);
  if (bytes == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const auto out_address = reinterpret_cast<std::uintptr_t>(out);
  const auto in_address = reinterpret_cast<std::uintptr_t>(in);
  const int device = p.dst.device.index;
  constexpr int threads = 256;
  if ((out_address & 15) != (in_address & 15)) {  // never both aligned: bytes only
    copy_bytes_kernel<<<grid_size(device, bytes, threads), threads, 0, s>>>(out, in, bytes);
    return;
  }
  std::size_t head = std::min(bytes, (16 - (out_address & 15)) & 15);
  std::size_t vectors = (bytes - head) / 16;
  std::size_t tail = bytes - head - vectors * 16;
  if (head) copy_bytes_kernel<<<1, threads, 0, s>>>(out, in, head);
  if (vectors)
    copy_vec16_kernel<kStreaming><<<grid_size(device, (vectors + kVectorsInFlight - 1) / kVectorsInFlight, threads), threads, 0,
                        s>>>(reinterpret_cast<uint4*>(out + head), reinterpret_cast<const uint4*>(in + head), vectors);
  if (tail) copy_bytes_kernel<<<1, threads, 0, s>>>(out + head + vectors * 16, in + head + vectors * 16, tail);
}

constexpr std::array<CopyVariant, 3> kVariants = {{
    {"memcpy_async", "cudaMemcpyAsync device to device (baseline)", Device::Kind::cuda, needs_contiguous,
     direct<CopyProblem, copy_memcpy_async>, nullptr, {}, Role::baseline},
    {"vec16", "grid-stride kernel, 16-byte loads and stores, 4 loads in flight per thread", Device::Kind::cuda,
     needs_contiguous, direct<CopyProblem, copy_vec16<false>>, nullptr, {}, Role::own, {.speed = 1}},
    {"vec16_cs", "vec16 with streaming (evict-first) stores", Device::Kind::cuda, needs_contiguous,
     direct<CopyProblem, copy_vec16<true>>},
}};

}  // namespace

std::span<const CopyVariant> cuda_copy_variants() { return kVariants; }

}  // namespace flopscope::kernels
