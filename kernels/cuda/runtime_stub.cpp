// Built instead of runtime.cu when flopscope is built without CUDA.
#include <stdexcept>

#include "flopscope/kernels/cuda_runtime.hpp"

namespace flopscope::kernels::cuda {

std::optional<std::string> unavailable_reason(int) {
  return "flopscope was built without CUDA (FLOPSCOPE_CUDA=OFF or no nvcc found)";
}

int device_count() { return 0; }

DeviceProperties device_properties(int) { return {}; }

namespace {
[[noreturn]] void unavailable() { throw std::runtime_error(*unavailable_reason(0)); }
}  // namespace

DeviceMemory::DeviceMemory(std::size_t, int) { unavailable(); }
DeviceMemory::~DeviceMemory() = default;
void copy_to_device(void*, const void*, std::size_t) { unavailable(); }
void copy_to_host(void*, const void*, std::size_t) { unavailable(); }
void synchronize(int) { unavailable(); }

}  // namespace flopscope::kernels::cuda
