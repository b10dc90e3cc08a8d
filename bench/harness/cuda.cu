#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>

#include "cuda.hpp"

namespace flopscope::bench::cuda {

namespace {

__global__ void spin_kernel(long long cycles, long long* elapsed) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0) elapsed[blockIdx.x] = clock64() - start;
}

__device__ unsigned long long global_timer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Holds the stream until the host sets *release (host-mapped memory), or for at most
// `timeout_ns`; then sets *timed_out if the host never released it.
__global__ void blocking_kernel(const volatile int* release, volatile int* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

// Reads every 16-byte word of `data` (an L2 flush that leaves clean lines); the write is never
// taken (the buffer is zeros), it only keeps the reads from being optimized away.
__global__ void read_kernel(const int4* __restrict__ data, std::size_t words, int* sink) {
  int acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const int4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x5eed1e55) *sink = acc;
}

// nvbench's L2 flush, reading instead of writing: a buffer of twice the L2 size, zeroed once at
// creation (long before any timed region), read before each timed iteration.
struct L2Flusher {
  int4* buffer = nullptr;
  int* sink = nullptr;
  std::size_t words = 0;
  int blocks = 1;
  std::string error;
  bool out_of_memory = false;
  L2Flusher(std::size_t l2_bytes, int sm_count) {
    if (l2_bytes == 0) return;
    const std::size_t bytes = std::max<std::size_t>(2 * l2_bytes, 1 << 20);
    words = bytes / sizeof(int4);
    blocks = std::max(sm_count, 1) * 4;
    cudaError_t status = cudaMalloc(&buffer, bytes);
    if (status == cudaSuccess) status = cudaMalloc(&sink, sizeof(int));
    if (status == cudaSuccess) status = cudaMemset(buffer, 0, bytes);
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
    if (status != cudaSuccess) {
      error = std::string("L2 flush buffer: ") + cudaGetErrorString(status);
      out_of_memory = status == cudaErrorMemoryAllocation;
      cudaGetLastError();
    }
  }
  ~L2Flusher() {
    cudaFree(buffer);
    cudaFree(sink);
  }
  void flush(cudaStream_t stream) const {
    if (words) read_kernel<<<blocks, 256, 0, stream>>>(buffer, words, sink);
  }
};

// Host-mapped flags for blocking_kernel.
struct StreamBlocker {
  int* host = nullptr;  // [0] release, [1] timed out
  int* device = nullptr;
  std::string error;
  StreamBlocker() {
    if (cudaHostAlloc(reinterpret_cast<void**>(&host), 2 * sizeof(int), cudaHostAllocMapped) != cudaSuccess ||
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host, 0) != cudaSuccess)
      error = std::string("blocking kernel flags: ") + cudaGetErrorString(cudaGetLastError());
  }
  ~StreamBlocker() { cudaFreeHost(host); }
  void block(cudaStream_t stream) {
    reinterpret_cast<volatile int*>(host)[0] = 0;
    reinterpret_cast<volatile int*>(host)[1] = 0;
    blocking_kernel<<<1, 1, 0, stream>>>(device, device + 1, 2'000'000'000ull);  // 2 s
  }
  void release() { reinterpret_cast<volatile int*>(host)[0] = 1; }
  bool timed_out() const { return reinterpret_cast<volatile int*>(host)[1] != 0; }
};

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t size, int device) : bytes(size), ordinal(device) {
  cudaError_t status = cudaSetDevice(ordinal);
  if (status == cudaSuccess) status = cudaMalloc(&data, std::max<std::size_t>(size, 1));
  if (status != cudaSuccess) {
    error = cudaGetErrorString(status);
    out_of_memory = status == cudaErrorMemoryAllocation;
    if (out_of_memory) cudaGetLastError();  // not sticky: clear it
    data = nullptr;
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (!data) return;
  cudaSetDevice(ordinal);
  cudaFree(data);
}

void upload(void* device, const void* host, std::size_t bytes) { cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice); }
void download(void* host, const void* device, std::size_t bytes) { cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost); }
void fill_bytes(void* device, int value, std::size_t bytes) { cudaMemset(device, value, bytes); }

std::optional<Error> take_error(int ordinal) {
  cudaSetDevice(ordinal);
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) status = cudaDeviceSynchronize();
  if (status == cudaSuccess) return std::nullopt;
  Error error{cudaGetErrorString(status), false};
  cudaGetLastError();
  // A sticky error survives clearing: the next synchronization reports it again.
  error.sticky = cudaDeviceSynchronize() != cudaSuccess;
  return error;
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
  if (take_error(ordinal) || ms <= 0) return 0;
  return double(cycles) / (ms * 1e-3);
}

std::optional<std::size_t> free_memory(int ordinal) {
  std::size_t free_bytes = 0, total = 0;
  if (cudaSetDevice(ordinal) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return free_bytes;
}

namespace {

// The stream and events of one timing, released however the timing ends (an exception of the
// timed call included).
struct TimingResources {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  TimingResources() {
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~TimingResources() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
  }
};

// Releases the blocking kernel if the timed call throws while the stream is held, so that it
// does not spin to its timeout.
struct ReleaseOnExit {
  StreamBlocker& blocker;
  ~ReleaseOnExit() { blocker.release(); }
};

}  // namespace

std::optional<Error> time_cuda(benchmark::State& state, const DeviceContext& device, bool hot,
                               const kernels::Runner& run) {
  const int ordinal = device.device.index;
  cudaSetDevice(ordinal);
  TimingResources timing;
  L2Flusher flusher(hot ? 0 : device.l2_bytes, device.sm_count);
  StreamBlocker blocker;
  if (!flusher.error.empty()) return Error{flusher.error, false, flusher.out_of_memory};
  if (!blocker.error.empty()) return Error{blocker.error, false};
  // Warm-up: at least 3 runs and 0.2 s, so that clocks have ramped and caches/TLBs are primed.
  const auto warmup_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3 || std::chrono::steady_clock::now() - warmup_start < std::chrono::milliseconds(200); ++i) {
    run(timing.stream);
    cudaStreamSynchronize(timing.stream);
    if (auto error = take_error(ordinal)) return Error{"in warm-up: " + error->message, error->sticky};
    if (i > 10000) break;
  }
  for (auto _ : state) {
    {
      ReleaseOnExit release{blocker};
      blocker.block(timing.stream);
      if (!hot) flusher.flush(timing.stream);
      cudaEventRecord(timing.start, timing.stream);
      run(timing.stream);
      cudaEventRecord(timing.stop, timing.stream);
    }
    float ms = 0;
    // A failed wait or reading (a sticky error in the timed work) ends the timing: recording 0 s
    // would make Google Benchmark multiply the iterations without end.
    if (cudaEventSynchronize(timing.stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, timing.start, timing.stop) != cudaSuccess)
      return take_error(ordinal).value_or(Error{"CUDA events failed", false});
    if (blocker.timed_out())
      return Error{"the timed call did not return within 2 s while its stream was held (does it synchronize?)", false};
    state.SetIterationTime(ms * 1e-3);
  }
  return take_error(ordinal);
}

}  // namespace flopscope::bench::cuda
