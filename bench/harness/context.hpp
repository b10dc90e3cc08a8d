// The flopscope context of a run: what every JSON file carries (context.flopscope, FORMAT.md:
// build, run, devices with their peaks, clocks, caches and ceilings, skipped devices), and the
// one line per device that the console shows instead of that JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "devices.hpp"
#include "flags.hpp"

namespace flopscope::bench {

// context.flopscope as a JSON document (schema 2): with the suite, the variants and the planned
// cases as --describe writes them (describe.hpp).
std::string context_json(const std::string& binary, const Selection& selection, const std::vector<DeviceContext>& devices,
                         nlohmann::json variants, nlohmann::json cases);

// "cpu: AMD EPYC, avx512, 2 cores, clock 3.48 GHz (measured); peaks f64 111 GFLOP/s, ...; memory
// unknown; ceilings from results/ceilings/cpu-amd-epyc.json" and "cuda:0: skipped: <reason>".
std::vector<std::string> device_lines(const std::vector<DeviceContext>& devices);

}  // namespace flopscope::bench
