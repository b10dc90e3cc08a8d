// CUDA side of the harness, callable from plain C++ (no CUDA headers here). Built only with CUDA.
#pragma once

#ifdef FLOPSCOPE_HAVE_CUDA

#include <benchmark/benchmark.h>

#include <cstddef>
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

// nullopt, or the pending error after the device's work (cleared where it can be).
std::optional<Error> take_error(int ordinal);

// The timing core for device work (nvbench's): a warm-up of at least 3 runs and 0.2 s (clocks
// ramp, caches and TLBs prime), then per iteration, all queued behind a kernel that holds the
// stream until the host has enqueued everything (so the events time the GPU's work, never a
// host launch gap): unless `hot`, an L2 flush that reads (not writes) twice the L2 size, so
// no dirty line's write-back lands in the timed region; a CUDA event; the work; a CUDA event;
// then SetIterationTime(elapsed). Returns the first error (the caller fails the case with it).
std::optional<Error> time_cuda(benchmark::State& state, const DeviceContext& device, bool hot,
                               const kernels::Runner& run);

// SM clock measured with clock64() against CUDA events, Hz; 0 on error.
double measure_clock_hz(int ordinal);
// Free device memory; nullopt where the runtime cannot say (a broken context).
std::optional<std::size_t> free_memory(int ordinal);

}  // namespace flopscope::bench::cuda

#endif
