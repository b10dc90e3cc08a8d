#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "flopscope/kernels/cuda_runtime.hpp"

namespace flopscope::kernels::cuda {

namespace {

std::string version_string(int version) {  // 13000 -> "13.0"
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace

std::optional<std::string> unavailable_reason(int ordinal) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls report their own
    return std::string(cudaGetErrorString(status));
  }
  if (count == 0) return std::string("no CUDA device found");
  if (ordinal < 0 || ordinal >= count)
    return "no CUDA device " + std::to_string(ordinal) + " (this machine has " + std::to_string(count) + ")";
  return std::nullopt;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

DeviceProperties device_properties(int ordinal) {
  DeviceProperties out;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
  out.name = prop.name;
  out.sm_major = prop.major;
  out.sm_minor = prop.minor;
  out.sm_count = prop.multiProcessorCount;
  out.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  out.global_memory_bytes = prop.totalGlobalMem;
  int clock_khz = 0, memory_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal);
  cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, ordinal);
  out.clock_ghz = clock_khz / 1e6;
  out.memory_clock_ghz = memory_clock_khz / 1e6;
  out.memory_bus_bits = prop.memoryBusWidth;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  out.cuda_runtime_version = version_string(runtime);
  out.driver_version = version_string(driver);
  return out;
}

namespace {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

}  // namespace

DeviceMemory::DeviceMemory(std::size_t size, int device) : bytes(size), ordinal(device) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  check(cudaMalloc(&data, size ? size : 1), "cudaMalloc");
}

// Freed on its own device, whichever is current (then the caller's is current again).
DeviceMemory::~DeviceMemory() {
  if (!data) return;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) current = -1;
  if (current != ordinal) cudaSetDevice(ordinal);
  cudaFree(data);
  if (current >= 0 && current != ordinal) cudaSetDevice(current);
  cudaGetLastError();
}

void copy_to_device(void* device_destination, const void* host_source, std::size_t bytes) {
  check(cudaMemcpy(device_destination, host_source, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}

void copy_to_host(void* host_destination, const void* device_source, std::size_t bytes) {
  check(cudaMemcpy(host_destination, device_source, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}

void synchronize(int ordinal) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  check(cudaGetLastError(), "CUDA error");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace flopscope::kernels::cuda
