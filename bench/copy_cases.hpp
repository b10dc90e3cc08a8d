// The copy case, shared by bench_copy (every variant and dtype), bench_convert (the f32->f32
// baseline beside each conversion) and bench_peak (the copy ceiling), so that all three measure
// a copy the same way: random source, poisoned destination, validated bit for bit against the
// source before it is timed; bytes 2 * n * element size (read once, written once).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "flopscope/kernels/copy.hpp"
#include "harness/case.hpp"
#include "harness/family.hpp"
#include "harness/devices.hpp"

namespace flopscope::bench {

// A contiguous copy of n elements of `dtype` by `variant` on `device`, named `name`.
Case copy_case(CaseName name, const kernels::CopyVariant& variant, DType dtype, std::int64_t n, Device device);

// <family>/copy/<dtype>/<device>/n=<n>: the contiguous copy of n elements that a family's cases
// are set against in their own process (bench_strided, bench_broadcast): baseline_copy().
Case copy_baseline(const std::string& family, DType dtype, std::int64_t n, Device device);

// The row of that copy among a family's variants: "copy", Role::baseline.
VariantRow copy_baseline_row();

// A group of a family's cases that share axes, each case set against a copy baseline.
struct BaselinedGroup {
  std::string name;
  std::vector<std::string> axes;
  std::function<std::optional<Case>(const Point&)> baseline;  // the copy a point's case is set against
  std::function<std::optional<Case>(const Point&)> build;     // the case
};

// The benches of `groups`: first each group's baselines (the single variant "copy"), then each
// group with `variants`, so that baselines run first, or interleaved with their cases under
// --benchmark_enable_random_interleaving.
std::vector<Bench> benches_with_baselines(const std::vector<BaselinedGroup>& groups,
                                          std::function<std::vector<VariantRow>(Device::Kind)> variants);

// The copy table of a kind of device (kernels/cpu/copy.cpp, kernels/cuda/copy.cu).
std::span<const kernels::CopyVariant> copy_variants(Device::Kind kind);

// bench_copy's fastest kernel on a kind of device (the row RowTraits::speed marks): the copy that
// bench_peak's ceiling and bench_convert's f32->f32 baseline time.
const kernels::CopyVariant& fastest_copy(Device::Kind kind);

// The copy that views and broadcasts are set against: on a GPU the table's baseline (the
// driver's copy, at the bandwidth the kernels reach); on the CPU the fastest kernel, since its
// baseline (libc memcpy on one thread) is far from what the machine can copy.
const kernels::CopyVariant& baseline_copy(Device::Kind kind);

}  // namespace flopscope::bench
