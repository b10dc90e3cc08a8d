// bench_peak writes the ceilings file itself (FORMAT.md's "Ceilings file"): the measured side of
// the roofline is written and read on the bench side only, never by analysis/. For each device,
// each ceiling label (ceiling=memory:copy, ceiling=compute:f32) gets the best median of the cases
// that carry it: bytes_per_second for memory, flops_per_second for compute. Skipped and failed
// cases do not count.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "case.hpp"
#include "devices.hpp"

namespace flopscope::bench {

class CeilingsCollector {
 public:
  // `ceilings` maps a registered case name to its device and ceiling label.
  struct Label {
    std::string device;
    CeilingRef ceiling;  // {memory, "copy"}, {compute, "f32"}
  };
  explicit CeilingsCollector(std::map<std::string, Label> labels) : labels_(std::move(labels)) {}

  // Every run Google Benchmark reports (repetitions and aggregates).
  void add(const benchmark::BenchmarkReporter::Run& run);

  // Writes <dir>/<device key>.json for each device with a ceiling that ran, atomically (a
  // temporary file renamed); with `keep_existing`, only where no file is there yet. Returns
  // one line per device written or kept, for the console; throws std::runtime_error on I/O.
  std::vector<std::string> write(const std::string& dir, bool keep_existing, const std::vector<DeviceContext>& devices,
                                 const std::string& source) const;

 private:
  struct Values {
    std::optional<double> median;  // the median aggregate
    std::vector<double> repetitions;
  };
  std::map<std::string, Label> labels_;
  std::map<std::string, Values> values_;  // by case name
};

}  // namespace flopscope::bench
