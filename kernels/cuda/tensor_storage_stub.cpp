// Built instead of tensor_storage.cu without CUDA: registers an allocator that says why not.
#include <memory>
#include <stdexcept>
#include <string>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/tensor_storage.hpp"
#include "flopscope/tensor.hpp"

namespace flopscope::kernels::cuda {

namespace {

class UnavailableAllocator final : public StorageAllocator {
 public:
  void* allocate(std::size_t, int ordinal) override {
    throw std::runtime_error("tensor storage on cuda:" + std::to_string(ordinal) + ": " +
                             unavailable_reason(ordinal).value_or("CUDA is unavailable"));
  }
  void deallocate(void*, std::size_t, int) noexcept override {}
  void copy_to_host(void*, const void*, std::size_t, int ordinal) override { allocate(0, ordinal); }
  void copy_from_host(void*, const void*, std::size_t, int ordinal) override { allocate(0, ordinal); }
};

}  // namespace

void register_tensor_storage() {
  static const std::shared_ptr<StorageAllocator> allocator = std::make_shared<UnavailableAllocator>();
  set_storage_allocator(Device::Kind::cuda, allocator);
}

}  // namespace flopscope::kernels::cuda
