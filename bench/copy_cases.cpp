#include "copy_cases.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#ifdef FLOPSCOPE_HAVE_CUDA
#include "harness/cuda.hpp"
#endif

namespace flopscope::bench {

void cpu_copy_case(benchmark::State& state, const DeviceContext& device, const kernels::CopyVariant& variant,
                   std::size_t count, std::size_t element_size, Work label) {
  const std::size_t bytes = count * element_size;
  if (skip_if_too_large(state, device, 2 * bytes)) return;
  HostBuffer src(bytes), dst(bytes);
  fill_random_bytes(src.data, bytes, 42);
  std::memset(dst.data, 0xA5, bytes);  // poison
  variant.run(dst.data, src.data, count, element_size);
  // A copy's reference result is its input: compare with src (tests compare each variant with
  // kernels::copy_reference).
  if (auto mismatch = compare_exact(dst.data, src.data, count, element_size)) {
    fail(state, std::string(variant.name) + ": " + *mismatch);
    return;
  }
  {
    NvtxRange timed("timed");
    for (auto _ : state) {
      variant.run(dst.data, src.data, count, element_size);
      benchmark::ClobberMemory();
    }
  }
  label.flops = 0;
  label.bytes = 2.0 * double(bytes);
  label.bound = Bound::memory;
  set_counters(state, device, label);
}

#ifdef FLOPSCOPE_HAVE_CUDA
void cuda_copy_case(benchmark::State& state, const DeviceContext& device, bool hot,
                    const kernels::cuda::CudaCopyVariant& variant, std::size_t count, std::size_t element_size,
                    Work label) {
  const std::size_t bytes = count * element_size;
  if (skip_if_too_large(state, device, 2 * bytes + 2 * device.l2_bytes)) return;
  cuda::DeviceBuffer src(bytes), dst(bytes);
  if (!src.error.empty() || !dst.error.empty()) {
    skip(state, "cudaMalloc: " + src.error + dst.error);
    return;
  }
  cuda::fill_random(src.data, bytes, 42);
  cuda::fill_bytes(dst.data, 0xA5, bytes);
  variant.run(dst.data, src.data, count, element_size, nullptr);
  if (auto error = cuda::take_error()) {
    fail(state, std::string(variant.name) + ": CUDA error: " + *error);
    return;
  }
  if (auto mismatch = cuda::compare_exact(dst.data, src.data, count, element_size)) {
    fail(state, std::string(variant.name) + ": " + *mismatch);
    return;
  }
  cuda::time_cuda(state, device, hot, [&](void* stream) { variant.run(dst.data, src.data, count, element_size, stream); });
  label.flops = 0;
  label.bytes = 2.0 * double(bytes);
  label.bound = Bound::memory;
  set_counters(state, device, label);
}
#endif

const kernels::CopyVariant& cpu_copy_variant(std::string_view name) {
  for (const auto& variant : kernels::cpu_copy_variants())
    if (variant.name == name) return variant;
  throw std::logic_error("no CPU copy variant '" + std::string(name) + "'");
}

#ifdef FLOPSCOPE_HAVE_CUDA
const kernels::cuda::CudaCopyVariant& cuda_copy_variant(std::string_view name) {
  for (const auto& variant : kernels::cuda::copy_variants())
    if (variant.name == name) return variant;
  throw std::logic_error("no CUDA copy variant '" + std::string(name) + "'");
}
#endif

}  // namespace flopscope::bench
