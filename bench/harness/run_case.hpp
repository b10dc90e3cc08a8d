// The one case skeleton of every family: allocate, fill, poison, run once, validate, time, count.
#pragma once

#include <benchmark/benchmark.h>

#include "case.hpp"
#include "devices.hpp"
#include "flopscope/kernels/variant.hpp"

namespace flopscope::bench {

// How CUDA runs are timed: --hot (no L2 flush between runs), --disable-blocking-kernel.
struct CudaTiming {
  bool hot = false;
  bool blocking = true;
};

// Runs `c` on `device` for Google Benchmark. Every exception of the case (an allocation, a
// variant's preparation, a reference) is caught and reported as a failure (or, for lack of
// memory, a skip): one case's trouble never stops the binary or truncates its JSON.
void run_case(benchmark::State& state, const DeviceContext& device, const Case& c, CudaTiming timing);

// The wall time one Google Benchmark call of a CUDA case may take for its timed runs (its
// iteration count is chosen from the first run's wall time: cuda.hpp's Timer); set from
// --benchmark_min_time (0.5 s, Google Benchmark's default, where not given).
void set_cuda_budget(double seconds);

// The bytes of host memory `c`'s operands take (their storage); SIZE_MAX where that overflows.
std::size_t case_bytes(const Case& c);

// The CPU timing core: the call in Google Benchmark's loop on its real-time clock (the work runs
// on every OpenMP thread, not just this one), memory clobbered after each call.
void time_cpu(benchmark::State& state, const kernels::Runner& run);

}  // namespace flopscope::bench
