// What a bench binary says of itself (`BINARY --describe`, analysis/FORMAT.md "Describe"): its
// family, axes, suites, every variant of its kernel tables with its role and whether it can run
// here, the devices, and the cases the command line selects, each with its role and the ceilings
// it is set against and measures. The JSON context of a run (schema 2) carries the same
// "variants" and "cases", so that the analysis reads roles and ceilings instead of lists of names.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "family.hpp"
#include "flags.hpp"

namespace flopscope::bench {

using PlannedCases = std::vector<std::pair<const DeviceContext*, Case>>;

inline constexpr int kDescribeSchema = 1;

// [{name, device, role, description, dtypes, compute_modes, available, reason}]: every variant
// of the family's benches on each kind of device this build has tables for.
nlohmann::json variants_json(const Family& family, const std::vector<DeviceContext>& devices, const PlannedCases& cases);

// The stopping rule's block of each planned case (rounds.hpp's blocks_of, numbered in run
// order); empty, or nullopt for a case, where the rule does not run (fixed repetitions).
using PlannedBlocks = std::vector<std::optional<std::size_t>>;

// [{name, variant, role, dtype, device, skip, ceiling, measures, group, beside, block, ...}], in
// planned order: `beside` the baseline a case is set against (Case::beside), `block` its block.
nlohmann::json cases_json(const PlannedCases& cases, const PlannedBlocks& blocks = {});

// The whole --describe document.
nlohmann::json describe_json(const Family& family, const Selection& selection, const std::vector<DeviceContext>& devices,
                             const PlannedCases& cases, const PlannedBlocks& blocks = {});

}  // namespace flopscope::bench
