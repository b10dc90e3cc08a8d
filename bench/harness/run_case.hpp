// The one case skeleton of every family: allocate, fill, poison, run once, validate, time, count.
#pragma once

#include <benchmark/benchmark.h>

#include "case.hpp"
#include "devices.hpp"
#include "flopscope/kernels/variant.hpp"

namespace flopscope::bench {

// Runs `c` on `device` for Google Benchmark. Every exception of the case (an allocation, a
// variant's preparation, a reference) is caught and reported as a failure (or, for lack of
// memory, a skip): one case's trouble never stops the binary or truncates its JSON.
void run_case(benchmark::State& state, const DeviceContext& device, const Case& c, bool hot);

// The CPU timing core: the call in Google Benchmark's loop on its real-time clock (the work runs
// on every OpenMP thread, not just this one), memory clobbered after each call.
void time_cpu(benchmark::State& state, const kernels::Runner& run);

}  // namespace flopscope::bench
