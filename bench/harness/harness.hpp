// The one harness of every bench binary (DESIGN.md): a family file describes its axes and how a
// point becomes a case (family.hpp, case.hpp) and calls run_family(); the harness does the rest:
// flags (flags.cpp), devices, clocks and ceilings (devices.cpp), expansion and registration
// (here), the case skeleton and timing (run_case.cpp, cuda.cu), counters (report.cpp), the JSON
// context (context.cpp), progress on the console, and bench_peak's ceilings file (ceilings.cpp).
#pragma once

#include <string>
#include <vector>

#include "family.hpp"
#include "flags.hpp"

namespace flopscope::bench {

// The cases of `family` for what `selection` asks on these devices, in the order they run:
// per device, dtype, each axis value (outermost first), variant. Combinations that do not exist
// are left out; a case whose name is already taken (a duplicate axis value, a bench that ignores
// an axis) is merged into the first. Throws SizeOverflow (and the like) from the accounting for a
// size whose counts do not fit.
std::vector<std::pair<const DeviceContext*, Case>> expand(const Family& family, const Selection& selection,
                                                          const std::vector<DeviceContext>& devices);

// main() of a bench binary: parses flags (exit 2 on a bad one), probes the devices, registers
// the cases and runs them with Google Benchmark; returns the exit code (0, or 2 when nothing is
// selected or the output cannot be written).
int run_family(int argc, char** argv, const Family& family);

}  // namespace flopscope::bench
