// bench_peak writes the ceilings file itself (FORMAT.md's "Ceilings file"): the measured side of
// the roofline is written and read on the bench side only, never by analysis/. For each device,
// each ceiling label (ceiling=memory:copy, ceiling=compute:f32) gets the best median of the cases
// that carry it: bytes_per_second for memory, flops_per_second for compute. Skipped and failed
// cases do not count. The file is rewritten (whole, atomically) after every ceiling case, so a
// bench_peak killed mid-run leaves every ceiling it finished on disk (the others null or absent).
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "case.hpp"
#include "devices.hpp"

namespace flopscope::bench {

class CeilingsCollector {
 public:
  // `labels` maps a registered case name to its device and ceiling label.
  struct Label {
    std::string device;
    CeilingRef ceiling;  // {memory, "copy"}, {compute, "f32"}
  };
  // Ceilings of `devices` go to <dir>/<device key>.json; with `keep_existing`, a device whose
  // file is there before the run keeps it (decided here, once). `source` is the run's JSON file.
  CeilingsCollector(std::map<std::string, Label> labels, std::string dir, bool keep_existing,
                    const std::vector<DeviceContext>& devices, std::string source);

  // Creates the directory; throws std::runtime_error where it cannot.
  void prepare() const;

  // Every run Google Benchmark reports (repetitions and aggregates); a run of a ceiling case
  // rewrites its device's file. Throws std::runtime_error on I/O.
  void add(const benchmark::BenchmarkReporter::Run& run);

  // One line per device written or kept, for the console at the end.
  std::vector<std::string> lines() const;

 private:
  struct Values {
    std::optional<double> median;  // the median aggregate
    std::vector<double> repetitions;
  };
  void write(const DeviceContext& device);

  std::map<std::string, Label> labels_;
  std::string dir_, source_;
  std::vector<DeviceContext> devices_;
  std::set<std::string> kept_, written_;  // device keys
  std::map<std::string, Values> values_;  // by case name
};

// Writes `text` to `path` whole: a temporary file beside it, renamed over it (a reader, or a
// process killed mid-write, never sees half a file). Throws std::runtime_error on I/O.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace flopscope::bench
