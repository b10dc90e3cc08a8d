// CUDA side of the harness, callable from plain C++ (no CUDA headers here). Built only with CUDA.
#pragma once

#ifdef FLOPSCOPE_HAVE_CUDA

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "devices.hpp"
#include "flopscope/kernels/variant.hpp"

namespace flopscope::bench::cuda {

// A CUDA error, as the runtime names it; `sticky` when the context is unusable afterwards (an
// illegal address: every later call fails too).
struct Error {
  std::string message;
  bool sticky = false;
  bool out_of_memory = false;  // a lack of memory: the case is skipped, not failed
};

// Device memory on one device; `error` says why when the allocation failed (data is then null),
// `out_of_memory` whether that was a lack of memory (a skip) rather than anything else (a failure).
struct DeviceBuffer {
  DeviceBuffer(std::size_t bytes, int ordinal);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data = nullptr;
  std::size_t bytes = 0;
  int ordinal = 0;
  std::string error;
  bool out_of_memory = false;
};

// Synchronous copies and a byte fill; errors are left pending for take_error().
void upload(void* device, const void* host, std::size_t bytes);
void download(void* host, const void* device, std::size_t bytes);
void fill_bytes(void* device, int value, std::size_t bytes);

// The harness's fills on the device, the same values as kernels::fill_random_bytes and (f32)
// fill_small_integers of a contiguous array; errors left pending for take_error().
void fill_random_bytes(void* device, std::size_t bytes, std::uint64_t seed);
void fill_small_integers_f32(void* device, std::int64_t count, std::uint64_t seed);
// One element's raw bits (of `element_size` <= 8 bytes), read back synchronously.
std::uint64_t read_element(const void* device, std::size_t element_size);

// nullopt, or the pending error after the device's work (cleared where it can be).
std::optional<Error> take_error(int ordinal);

// The timing core for device work (nvbench's), made once per case at its set-up: a stream, two
// CUDA events, an L2 flush buffer of twice the L2 size (unless hot) and the flags of a blocking
// kernel, each of its kernels loaded (cudaFuncGetAttributes) and launched once here, outside any
// timed region: under CUDA's lazy module loading (the default since 12.2) a first launch inside
// the blocked region could wait behind the blocking kernel. The case's own kernels have run in
// its validated run and warm-up before. (CUDA_MODULE_LOADING=EAGER would do it for every module
// of cuBLAS too: a larger context and a slower start of every binary, for nothing timed.)
// Per timed run, all queued behind a kernel that holds the stream until the host has enqueued
// everything (so the events time the GPU's work, never a host launch gap): unless hot, an L2
// flush that reads (not writes) the buffer, so no dirty line's write-back lands in the timed
// region; a CUDA event; the work; a CUDA event. Without `blocking` (--disable-blocking-kernel)
// no blocking kernel is made or launched: under a tool that serializes launches
// (compute-sanitizer) it would hold the stream until its timeout, the host never reaching the
// release.
class Timer {
 public:
  Timer(const DeviceContext& device, bool hot, bool blocking);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  // Why the resources could not be made, if they could not.
  const std::optional<Error>& error() const;
  // At least 3 runs and `seconds` (50 ms: clocks ramp, caches and TLBs prime), untimed.
  std::optional<Error> warm_up(const kernels::Runner& run, double seconds);
  // One call of Google Benchmark: the first timed run's wall time sets how many runs fit in
  // `budget_seconds` of wall time (at least one per iteration Google Benchmark asks for); each
  // iteration's time (SetIterationTime) is the mean GPU time of its runs. `timed_runs` gets how
  // many runs were timed. Returns the first error (the caller fails the case with it).
  std::optional<Error> time(benchmark::State& state, const kernels::Runner& run, double budget_seconds,
                            std::int64_t& timed_runs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SM clock measured with clock64() against CUDA events, Hz; 0 on error.
double measure_clock_hz(int ordinal);
// Free device memory; nullopt where the runtime cannot say (a broken context).
std::optional<std::size_t> free_memory(int ordinal);

}  // namespace flopscope::bench::cuda

#endif
