#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "cuda.hpp"
#include "flopscope/kernels/hash.hpp"

namespace flopscope::bench::cuda {

namespace {

__global__ void fill_random_kernel(std::uint64_t* data, std::size_t words, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words;
       i += std::size_t(gridDim.x) * blockDim.x) {
    data[i] = kernels::hash_index(seed, i);
  }
}

__global__ void first_mismatch_kernel(const unsigned char* a, const unsigned char* b, std::size_t bytes,
                                      unsigned long long* first, unsigned long long* count) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < bytes;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if (a[i] != b[i]) {
      atomicMin(first, static_cast<unsigned long long>(i));
      atomicAdd(count, 1ull);
    }
  }
}

__global__ void spin_kernel(long long cycles, long long* elapsed) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0) elapsed[blockIdx.x] = clock64() - start;
}

// The L2 flush of nvbench: write a buffer of twice the L2 size before each timed iteration.
struct L2Flusher {
  void* buffer = nullptr;
  std::size_t bytes = 0;
  explicit L2Flusher(std::size_t l2_bytes) : bytes(std::max<std::size_t>(2 * l2_bytes, 1 << 20)) {
    if (cudaMalloc(&buffer, bytes) != cudaSuccess) buffer = nullptr;
  }
  ~L2Flusher() { cudaFree(buffer); }
  void flush(cudaStream_t stream) const {
    if (buffer) cudaMemsetAsync(buffer, 0, bytes, stream);
  }
};

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t size) : bytes(size) {
  cudaError_t status = cudaMalloc(&data, std::max<std::size_t>(size, 1));
  if (status != cudaSuccess) {
    error = cudaGetErrorString(status);
    cudaGetLastError();
    data = nullptr;
  }
}

DeviceBuffer::~DeviceBuffer() { cudaFree(data); }

std::optional<std::string> take_error() {
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) status = cudaDeviceSynchronize();
  if (status == cudaSuccess) return std::nullopt;
  return std::string(cudaGetErrorString(status));
}

void fill_random(void* data, std::size_t bytes, std::uint64_t seed) {
  fill_random_kernel<<<1024, 256>>>(static_cast<std::uint64_t*>(data), bytes / 8, seed);
  if (bytes % 8) cudaMemset(static_cast<unsigned char*>(data) + bytes / 8 * 8, 0x5A, bytes % 8);
}

void fill_bytes(void* data, int value, std::size_t bytes) { cudaMemset(data, value, bytes); }

std::optional<std::string> compare_exact(const void* out, const void* ref, std::size_t count,
                                         std::size_t element_size) {
  const std::size_t bytes = count * element_size;
  if (bytes == 0) return std::nullopt;
  unsigned long long* results = nullptr;
  cudaMalloc(&results, 2 * sizeof(unsigned long long));
  unsigned long long init[2] = {~0ull, 0ull};
  cudaMemcpy(results, init, sizeof init, cudaMemcpyHostToDevice);
  first_mismatch_kernel<<<1024, 256>>>(static_cast<const unsigned char*>(out), static_cast<const unsigned char*>(ref),
                                       bytes, results, results + 1);
  unsigned long long host[2] = {0, 0};
  cudaMemcpy(host, results, sizeof host, cudaMemcpyDeviceToHost);
  cudaFree(results);
  if (auto error = take_error()) return "CUDA error while validating: " + *error;
  if (host[1] == 0) return std::nullopt;
  return std::to_string(host[1]) + " of " + std::to_string(bytes) + " bytes differ, first at element " +
         std::to_string(host[0] / element_size);
}

double measure_clock_hz(int ordinal) {
  cudaSetDevice(ordinal);
  int sms = 1;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal);
  long long* elapsed = nullptr;
  cudaMalloc(&elapsed, sizeof(long long) * sms);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  constexpr long long cycles = 200'000'000;  // ~0.1 s at 2 GHz, after the same as warm-up
  spin_kernel<<<sms, 32>>>(cycles, elapsed);
  cudaEventRecord(start);
  spin_kernel<<<sms, 32>>>(cycles, elapsed);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(elapsed);
  if (take_error() || ms <= 0) return 0;
  return double(cycles) / (ms * 1e-3);
}

std::size_t free_memory(int ordinal) {
  cudaSetDevice(ordinal);
  std::size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

void time_cuda(benchmark::State& state, const DeviceContext& device, bool hot,
               const std::function<void(void* stream)>& enqueue) {
  cudaSetDevice(device.device.index);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  L2Flusher flusher(hot ? 0 : device.l2_bytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  auto cleanup = [&] {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
  };
  // Warm-up: at least 3 runs and 0.2 s, so that clocks have ramped and caches/TLBs are primed.
  auto warmup_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3 || std::chrono::steady_clock::now() - warmup_start < std::chrono::milliseconds(200); ++i) {
    enqueue(stream);
    cudaStreamSynchronize(stream);
    if (i > 10000) break;
  }
  if (auto error = take_error()) {
    fail(state, "CUDA error in warm-up: " + *error);
    cleanup();
    return;
  }
  NvtxRange timed("timed");
  for (auto _ : state) {
    if (!hot) flusher.flush(stream);
    cudaEventRecord(start, stream);
    enqueue(stream);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms * 1e-3);
  }
  if (auto error = take_error()) fail(state, "CUDA error: " + *error);
  cleanup();
}

}  // namespace flopscope::bench::cuda
