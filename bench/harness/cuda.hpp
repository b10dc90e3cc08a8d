// CUDA side of the harness, callable from plain C++ (no CUDA headers here). Built only with CUDA.
#pragma once

#ifdef FLOPSCOPE_HAVE_CUDA

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "harness.hpp"

namespace flopscope::bench::cuda {

// Device memory; `error` says why when the allocation failed (data is then null).
struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data = nullptr;
  std::size_t bytes = 0;
  std::string error;
};

// The timing core for device work: a warm-up of at least 0.2 s (clocks settle), then per
// iteration: flush L2 (unless `hot`), CUDA event, enqueue(stream), CUDA event, synchronize,
// SetIterationTime(elapsed). Fails the case with the CUDA error string on any error.
void time_cuda(benchmark::State& state, const DeviceContext& device, bool hot,
               const std::function<void(void* stream)>& enqueue);

void fill_random(void* data, std::size_t bytes, std::uint64_t seed);
void fill_bytes(void* data, int value, std::size_t bytes);
// Exact comparison on the device: nullopt if equal, else the first mismatching indices.
std::optional<std::string> compare_exact(const void* out, const void* ref, std::size_t count,
                                         std::size_t element_size);
// nullopt, or the pending CUDA error (and clears it).
std::optional<std::string> take_error();
// SM clock measured with clock64() against CUDA events, Hz; 0 on error.
double measure_clock_hz(int ordinal);
std::size_t free_memory(int ordinal);

}  // namespace flopscope::bench::cuda

#endif
