// CUDA storage for flopscope tensors: cudaMalloc / cudaFree / cudaMemcpy on the tensor's device.
#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/tensor_storage.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope::kernels::cuda {

namespace {

void check(cudaError_t status, const char* what, int ordinal) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear it so that later calls report their own
  throw std::runtime_error(std::string("tensor storage on cuda:") + std::to_string(ordinal) + ": " + what + ": " +
                           cudaGetErrorString(status));
}

// Runs on `ordinal` and restores the caller's current device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    check(cudaSetDevice(ordinal), "cudaSetDevice", ordinal);
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class CudaAllocator final : public StorageAllocator {
 public:
  void* allocate(std::size_t bytes, int ordinal) override {
    if (auto reason = unavailable_reason(ordinal))
      throw std::runtime_error("tensor storage on cuda:" + std::to_string(ordinal) + ": " + *reason);
    DeviceGuard guard(ordinal);
    void* data = nullptr;
    check(cudaMalloc(&data, bytes > 0 ? bytes : 1), "cudaMalloc", ordinal);
    return data;
  }
  void deallocate(void* data, std::size_t, int ordinal) noexcept override {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (cudaSetDevice(ordinal) == cudaSuccess) cudaFree(data);
    if (previous >= 0) cudaSetDevice(previous);
    cudaGetLastError();
  }
  void copy_to_host(void* host, const void* source, std::size_t bytes, int ordinal) override {
    if (bytes == 0) return;
    DeviceGuard guard(ordinal);
    check(cudaMemcpy(host, source, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host", ordinal);
  }
  void copy_from_host(void* destination, const void* host, std::size_t bytes, int ordinal) override {
    if (bytes == 0) return;
    DeviceGuard guard(ordinal);
    check(cudaMemcpy(destination, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy from the host", ordinal);
  }
};

}  // namespace

void register_tensor_storage() {
  static const std::shared_ptr<StorageAllocator> allocator = std::make_shared<CudaAllocator>();
  set_storage_allocator(Device::Kind::cuda, allocator);
}

}  // namespace flopscope::kernels::cuda
