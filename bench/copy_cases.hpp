// The copy case, shared by bench_copy (every variant and dtype), bench_convert (the f32->f32
// baseline beside each conversion) and bench_peak (the copy ceiling), so that all three measure
// a copy the same way: random source, poisoned destination, validated against copy_reference
// before it is timed; bytes 2 * n * element size (read once, written once).
#pragma once

#include <cstdint>

#include "flopscope/kernels/copy.hpp"
#include "harness/case.hpp"
#include "harness/devices.hpp"

namespace flopscope::bench {

// A contiguous copy of n elements of `dtype` by `variant` on `device`, named `name`.
Case copy_case(CaseName name, const kernels::CopyVariant& variant, DType dtype, std::int64_t n, Device device);

// The copy table of a kind of device (kernels/cpu/copy.cpp, kernels/cuda/copy.cu).
std::span<const kernels::CopyVariant> copy_variants(Device::Kind kind);

}  // namespace flopscope::bench
