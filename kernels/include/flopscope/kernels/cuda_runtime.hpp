// What the kernels need to know of the CUDA runtime, callable from plain C++ whether or not
// flopscope was built with CUDA.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace flopscope::kernels::cuda {

// nullopt when CUDA device `ordinal` can run kernels; otherwise why not, in the runtime's words
// ("CUDA driver version is insufficient for CUDA runtime version") or "built without CUDA".
std::optional<std::string> unavailable_reason(int ordinal = 0);

// Number of CUDA devices that can run kernels (0 without a driver, a GPU or CUDA support).
int device_count();

struct DeviceProperties {
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_memory_bytes = 0;
  double clock_ghz = 0;          // as the runtime reports it (max boost)
  double memory_clock_ghz = 0;
  int memory_bus_bits = 0;
  std::string cuda_runtime_version;  // "13.0"
  std::string driver_version;
};

DeviceProperties device_properties(int ordinal);

// Plain device memory and copies for tools and tests (the bench harness owns its own buffers).
// Each throws std::runtime_error with the runtime's message (or "built without CUDA").
// DeviceMemory allocates on device `ordinal` and leaves it current (kernels launched next run
// there); it is freed on that device whichever is current then.
struct DeviceMemory {
  explicit DeviceMemory(std::size_t bytes, int ordinal = 0);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* data = nullptr;
  std::size_t bytes = 0;
  int ordinal = 0;
};
void copy_to_device(void* device_destination, const void* host_source, std::size_t bytes);
void copy_to_host(void* host_destination, const void* device_source, std::size_t bytes);
// Waits for the device's queued work; throws the pending error, if any.
void synchronize(int ordinal = 0);

}  // namespace flopscope::kernels::cuda
