// Google Benchmark's JSON for --benchmark_out, kept whole on disk after every case: the context
// and each case's entries (its repetitions, then its aggregates) go through Google Benchmark's
// own JSONReporter into a string, closed as Finalize() would close it, and the string replaces
// the file (a temporary renamed). A binary killed mid-run (timeout, SIGKILL) leaves a valid JSON
// file of every case that finished; only the cases in flight are lost. The median aggregate
// carries the CI of the median (rounds.hpp's add_ci).
//
// Two ways in: as Google Benchmark's file reporter (fixed --benchmark_repetitions, and
// bench_collectives), where the runs arrive case by case; or set_case() from the stopping rule's
// rounds (harness.cpp), where the harness collects a case's repetitions itself. Google Benchmark
// opens the --benchmark_out file itself (and truncates it) when it is the file reporter; this
// reporter writes the file under the same name, never through that stream.
#pragma once

#include <benchmark/benchmark.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flopscope::bench {

class WholeJsonFile : public benchmark::BenchmarkReporter {
 public:
  explicit WholeJsonFile(std::string path);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;
  // Replaces a case's entries (a new case goes last), and saves.
  void set_case(std::vector<Run> entries);
  // The first write that failed, if any (the run goes on; the caller reports it and exits 2).
  const std::optional<std::string>& error() const { return error_; }

 private:
  std::vector<Run>& entries_of(const Run& run);
  void save();
  std::string path_;
  std::optional<Context> context_;
  std::vector<std::pair<std::string, std::vector<Run>>> cases_;  // by run_name, in order of arrival
  std::optional<std::string> error_;
};

}  // namespace flopscope::bench
