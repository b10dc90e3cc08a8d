#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "cuda.hpp"
#include "flopscope/kernels/hash.hpp"

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

__global__ void random_words_kernel(std::uint64_t* words, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    words[i] = kernels::hash_index(seed, i);
}

__global__ void random_tail_kernel(unsigned char* bytes, std::size_t begin, std::size_t end) {
  const std::size_t i = begin + threadIdx.x;
  if (i < end) bytes[i] = static_cast<unsigned char>(0x5A + i);
}

__global__ void small_integers_kernel(float* out, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = kernels::small_integer(i, seed);
}

constexpr int kFillBlocks = 1024, kFillThreads = 256;

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

void fill_random_bytes(void* device, std::size_t bytes, std::uint64_t seed) {
  const std::size_t words = bytes / 8;
  if (words) random_words_kernel<<<kFillBlocks, kFillThreads>>>(static_cast<std::uint64_t*>(device), words, seed);
  if (bytes % 8) random_tail_kernel<<<1, 8>>>(static_cast<unsigned char*>(device), words * 8, bytes);
}

void fill_small_integers_f32(void* device, std::int64_t count, std::uint64_t seed) {
  if (count > 0) small_integers_kernel<<<kFillBlocks, kFillThreads>>>(static_cast<float*>(device), std::size_t(count), seed);
}

std::uint64_t read_element(const void* device, std::size_t element_size) {
  std::uint64_t bits = 0;
  cudaMemcpy(&bits, device, std::min<std::size_t>(element_size, sizeof bits), cudaMemcpyDeviceToHost);
  return bits;
}

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

struct Timer::Impl {
  int ordinal = 0;
  bool hot = false;
  bool blocking = true;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::unique_ptr<L2Flusher> flusher;
  std::unique_ptr<StreamBlocker> blocker;
  std::optional<Error> error;

  ~Impl() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
  // One timed run; its GPU time in ms.
  std::optional<Error> run_once(const kernels::Runner& run, float& ms);
};

// Releases the blocking kernel if the timed call throws while the stream is held, so that it
// does not spin to its timeout.
struct ReleaseOnExit {
  StreamBlocker* blocker;  // null: none (--disable-blocking-kernel)
  ~ReleaseOnExit() {
    if (blocker) blocker->release();
  }
};

Timer::Timer(const DeviceContext& device, bool hot, bool blocking) : impl_(std::make_unique<Impl>()) {
  Impl& t = *impl_;
  t.ordinal = device.device.index;
  t.hot = hot;
  t.blocking = blocking;
  cudaSetDevice(t.ordinal);
  cudaError_t status = cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking);
  if (status == cudaSuccess) status = cudaEventCreate(&t.start);
  if (status == cudaSuccess) status = cudaEventCreate(&t.stop);
  if (status != cudaSuccess) {
    cudaGetLastError();
    t.error = Error{std::string("timing stream and events: ") + cudaGetErrorString(status), false};
    return;
  }
  t.flusher = std::make_unique<L2Flusher>(hot ? 0 : device.l2_bytes, device.sm_count);
  if (!t.flusher->error.empty()) {
    t.error = Error{t.flusher->error, false, t.flusher->out_of_memory};
    return;
  }
  if (blocking) {
    t.blocker = std::make_unique<StreamBlocker>();
    if (!t.blocker->error.empty()) {
      t.error = Error{t.blocker->error, false};
      return;
    }
  }
  // Load and launch each timing kernel once, before any timed run (the blocking kernel released
  // before it starts, so it returns at once).
  cudaFuncAttributes attributes{};
  cudaFuncGetAttributes(&attributes, read_kernel);
  t.flusher->flush(t.stream);
  if (t.blocker) {
    cudaFuncGetAttributes(&attributes, blocking_kernel);
    t.blocker->block(t.stream);
    t.blocker->release();
  }
  cudaStreamSynchronize(t.stream);
  if (auto error = take_error(t.ordinal)) t.error = Error{"launching the timing kernels: " + error->message, error->sticky};
}

Timer::~Timer() = default;

const std::optional<Error>& Timer::error() const { return impl_->error; }

std::optional<Error> Timer::warm_up(const kernels::Runner& run, double seconds) {
  Impl& t = *impl_;
  cudaSetDevice(t.ordinal);
  const auto start = std::chrono::steady_clock::now();
  const auto least = std::chrono::duration<double>(seconds);
  for (int i = 0; i < 3 || std::chrono::steady_clock::now() - start < least; ++i) {
    run(t.stream);
    cudaStreamSynchronize(t.stream);
    if (auto error = take_error(t.ordinal)) return Error{"in warm-up: " + error->message, error->sticky};
    if (i > 10000) break;
  }
  return std::nullopt;
}

std::optional<Error> Timer::Impl::run_once(const kernels::Runner& run, float& ms) {
  {
    ReleaseOnExit release{blocker.get()};
    if (blocker) blocker->block(stream);
    if (!hot) flusher->flush(stream);
    cudaEventRecord(start, stream);
    run(stream);
    cudaEventRecord(stop, stream);
  }
  // A failed wait or reading (a sticky error in the timed work) ends the timing: recording 0 s
  // would make Google Benchmark multiply the iterations without end.
  if (cudaEventSynchronize(stop) != cudaSuccess || cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)
    return take_error(ordinal).value_or(Error{"CUDA events failed", false});
  if (blocker && blocker->timed_out())
    return Error{"the timed call did not return within 2 s while its stream was held (does it synchronize?)", false};
  return std::nullopt;
}

std::optional<Error> Timer::time(benchmark::State& state, const kernels::Runner& run, double budget_seconds,
                                 std::int64_t& timed_runs) {
  Impl& t = *impl_;
  cudaSetDevice(t.ordinal);
  constexpr std::int64_t kMaxRuns = 100'000;
  const auto call_start = std::chrono::steady_clock::now();
  const std::int64_t asked = std::max<std::int64_t>(state.max_iterations, 1);
  std::int64_t per_iteration = 1;
  bool calibrated = false;
  timed_runs = 0;
  for (auto _ : state) {
    double sum_ms = 0;
    std::int64_t runs = 0;
    while (runs < per_iteration) {
      const auto run_start = std::chrono::steady_clock::now();
      float ms = 0;
      if (auto error = t.run_once(run, ms)) return error;
      sum_ms += ms;
      ++runs;
      if (!calibrated) {  // the runs that fit in what is left of the budget, from this one's wall time
        calibrated = true;
        const auto now = std::chrono::steady_clock::now();
        const double wall = std::chrono::duration<double>(now - run_start).count();
        const double left = budget_seconds - std::chrono::duration<double>(now - call_start).count();
        const auto fit = std::int64_t(std::clamp(left / std::max(wall, 1e-7), 0.0, double(kMaxRuns)));
        per_iteration = std::max<std::int64_t>(1, (fit + 1 + asked - 1) / asked);
      }
    }
    timed_runs += runs;
    state.SetIterationTime(sum_ms / double(runs) * 1e-3);
  }
  return take_error(t.ordinal);
}

}  // namespace flopscope::bench::cuda
