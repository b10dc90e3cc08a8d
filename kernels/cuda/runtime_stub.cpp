// Built instead of runtime.cu when flopscope is built without CUDA.
#include "flopscope/kernels/cuda_runtime.hpp"

namespace flopscope::kernels::cuda {

std::optional<std::string> unavailable_reason(int) {
  return "flopscope was built without CUDA (FLOPSCOPE_CUDA=OFF or no nvcc found)";
}

int device_count() { return 0; }

DeviceProperties device_properties(int) { return {}; }

}  // namespace flopscope::kernels::cuda
