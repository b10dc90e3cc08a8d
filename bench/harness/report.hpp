// What a case reports to Google Benchmark: its counters and label, or why it was skipped or failed.
//
// Note [skips vs failures]: Google Benchmark 1.7.1 has SkipWithError but not SkipWithMessage.
// flopscope prefixes the message: "skipped: <reason>" (no GPU, not enough memory, ISA missing)
// or "failed: <reason>" (validation mismatch, CUDA error, an exception). analysis/ tells them
// apart by prefix.
#pragma once

#include <benchmark/benchmark.h>

#include <string>

#include "case.hpp"
#include "devices.hpp"

namespace flopscope::bench {

void skip(benchmark::State& state, const std::string& reason);  // "skipped: ..."
void fail(benchmark::State& state, const std::string& reason);  // "failed: ..."

// Sets flops, bytes, their rates, intensity, the fractions of the device's peak and ceiling, the
// case's extra counters, and the label (bound=, compute=, ceiling=).
void set_counters(benchmark::State& state, const DeviceContext& device, const Case& c, const Counters& extra);

// NVTX range named "flopscope/<name>" for Nsight Systems; a no-op without CUDA.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace flopscope::bench
