// The cases of a run directory as ./bench.sh writes it (analysis/FORMAT.md): every Google
// Benchmark JSON file directly inside it, each case by its parsed name and the entry that stands
// for it (its median aggregate, else its one iteration, else the repetition of median real_time).
// Other JSON of the run (status.json, ...) is counted and left alone; non-finite statistics that
// Google Benchmark writes as bare nan/inf (the cv of a constant counter) are read as null.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "naming.hpp"  // bench/harness: the benchmark-name grammar

namespace flopscope::cli {

struct RunCase {
  bench::CaseName name;
  std::optional<nlohmann::json> entry;  // nullopt: the case failed or was skipped
  std::size_t file = 0;                 // index into RunCases::paths and contexts
};

struct RunCases {
  std::vector<std::string> paths;            // the Google Benchmark JSON files read
  std::vector<nlohmann::json> contexts;      // each one's "context"
  std::vector<RunCase> cases;
  int other_files = 0;                       // JSON files that are not benchmark results
};

// UsageError "<option>: ..." for a path that is no directory, invalid JSON, a benchmark file
// without its context, or a case name outside the grammar.
RunCases read_run_cases(const std::string& option, const std::string& run_dir);

// The value of `key=` in a case's label ("compute=tf32 ..."), "" when absent.
std::string label_value(const std::string& label, const std::string& key);

}  // namespace flopscope::cli
