// Device storage for flopscope tensors (lib/include/flopscope/tensor.hpp). lib/ knows nothing of
// device runtimes; this registers the CUDA runtime's allocator with it.
#pragma once

namespace flopscope::kernels::cuda {

// Registers the CUDA storage allocator (cudaMalloc/cudaFree/cudaMemcpy) for Device::Kind::cuda,
// so that Tensor::to(Device::cuda(n)) and factories with a CUDA device work. Idempotent. Where
// CUDA cannot be used (no GPU, no driver, a build without CUDA) it still registers, and every
// allocation throws std::runtime_error with unavailable_reason(n), so the error says why.
void register_tensor_storage();

}  // namespace flopscope::kernels::cuda
