// Google Benchmark's JSON for --benchmark_out, kept whole on disk after every case: each report
// goes through Google Benchmark's own JSONReporter into a string, and the string, closed as
// Finalize() would close it, replaces the file (a temporary renamed). A binary killed mid-run
// (timeout, SIGKILL) leaves a valid JSON file of every case that finished; only the case in
// flight is lost. Google Benchmark opens the file itself (and truncates it); this reporter writes
// the file under the same name, never through that stream. Every bench binary's file reporter
// (run_family's, and rank 0's in bench_collectives).
#pragma once

#include <benchmark/benchmark.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace flopscope::bench {

class WholeJsonFile : public benchmark::BenchmarkReporter {
 public:
  explicit WholeJsonFile(std::string path);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;
  // The first write that failed, if any (the run goes on; the caller reports it and exits 2).
  const std::optional<std::string>& error() const { return error_; }

 private:
  void save(const std::string& tail);
  std::string path_, closing_;
  std::ostringstream text_;
  benchmark::JSONReporter json_;
  std::optional<std::string> error_;
};

}  // namespace flopscope::bench
