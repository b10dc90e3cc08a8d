// The copy case, shared by bench_copy (every variant and dtype), bench_convert (the f32->f32
// baseline beside each conversion) and bench_peak (the copy ceiling), so that all three measure
// a copy the same way: random source, poisoned destination, validated against the source before
// it is timed; bytes 2 * count * element_size (read once, written once).
#pragma once

#include <cstddef>
#include <string_view>

#include "flopscope/kernels/copy.hpp"
#include "harness/harness.hpp"

namespace flopscope::bench {

// `label` is what the caller adds to the counters (compute mode, ceiling); flops, bytes and
// bound are the copy's.
void cpu_copy_case(benchmark::State& state, const DeviceContext& device, const kernels::CopyVariant& variant,
                   std::size_t count, std::size_t element_size, Work label = {});

#ifdef FLOPSCOPE_HAVE_CUDA
void cuda_copy_case(benchmark::State& state, const DeviceContext& device, bool hot,
                    const kernels::cuda::CudaCopyVariant& variant, std::size_t count, std::size_t element_size,
                    Work label = {});
#endif

// The variant called `name` (kernels/cpu/copy.cpp, kernels/cuda/copy.cu); throws
// std::logic_error if none is.
const kernels::CopyVariant& cpu_copy_variant(std::string_view name);
#ifdef FLOPSCOPE_HAVE_CUDA
const kernels::cuda::CudaCopyVariant& cuda_copy_variant(std::string_view name);
#endif

}  // namespace flopscope::bench
