// How many repetitions a case gets: the stopping rule, the CI of the median, and the aggregates.
//
// Note [the stopping rule]: unless the user fixes --benchmark_repetitions (then Google Benchmark
// runs exactly that many, as ever), every case gets at least kMinRepetitions repetitions of
// --benchmark_min_time (0.05 s unless given), and more until the 95% distribution-free CI of the
// median time (order statistics: [x(j), x(n+1-j)], the largest j whose coverage
// 1 - 2 P(Bin(n, 1/2) < j) is >= 95%) lies within +-3% of the median, at most kMaxRepetitions;
// a case that never gets there is written with `resolved` 0 ("unresolved"). Google Benchmark
// 1.7.1 fixes repetitions per registration, so the harness drives it: RunSpecifiedBenchmarks is
// called once per round with a filter of the cases still open, one repetition each, and the
// harness keeps each case's repetitions and writes them, with aggregates computed as Google
// Benchmark computes them, into the JSON itself (json_file.hpp).
//
// Interleaving: the cases run in blocks of consecutive planned cases (the variants of one shape,
// and its neighbours up to kBlockCases), and a block's rounds interleave its cases (A B C, A B C,
// ...). A ratio of two cases of one block ("x of vendor", "x of copy") comes from repetitions
// taken seconds apart, so both see the same drift of the host; a case's CI spans only its
// block's seconds, not the binary's minutes (host bandwidth on a shared VM switches between
// levels for seconds at a time; across a whole run that drift is not the case's noise). Drift
// across the binary is measured instead: a baseline copy at its start and end (harness.cpp).
// A baseline (a family's copy) the rule is done with goes on while another case of its block is
// open, so that each repetition of the cases set against it has one of the copy's from its own
// round: the report pairs them (round k's case over round k's copy) for the CI of the ratio.
//
// CUDA cases go through the same rounds: each repetition is one Google Benchmark iteration of
// many timed runs (cuda.hpp's Timer), and their CI is written the same way.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flopscope::bench {

inline constexpr int kMinRepetitions = 6;
inline constexpr int kMaxRepetitions = 20;
inline constexpr double kResolvedWithin = 0.03;  // the CI's half-width, a fraction of the median
inline constexpr double kCILevel = 0.95;
inline constexpr double kRuleMinTime = 0.05;     // seconds a repetition, unless --benchmark_min_time
inline constexpr std::size_t kBlockCases = 6;    // a block: up to this many consecutive cases, a shape's variants whole
// Set-up CPU cases kept at once (run_case.cpp), at most kPreparedCases of at most kPreparedBytes
// of operands: a block whose operands take more runs its cases one after another instead of in
// rounds (a 2 GiB copy beside a 6 GiB triad would be set up again at every repetition), and the
// cases set against one baseline join its block only while the block stays within both.
inline constexpr std::size_t kPreparedBytes = std::size_t(4) << 30;
inline constexpr std::size_t kPreparedCases = 3 * kBlockCases;
inline constexpr std::size_t kNoBaseline = SIZE_MAX;  // blocks_of's `against` of a case set against none

using Run = benchmark::BenchmarkReporter::Run;

struct MedianCI {
  double median = 0, low = 0, high = 0;
  double coverage = 0;  // the probability that [low, high] holds the true median
  int n = 0;
  bool reaches_level() const { return coverage >= kCILevel; }
  // The larger distance of a bound from the median, a fraction of it.
  double half_width() const;
  bool resolved() const { return reaches_level() && half_width() <= kResolvedWithin; }
};

// The narrowest symmetric order-statistic interval of the median with coverage >= kCILevel; where
// none has (n < 6), min..max with its own coverage. nullopt under 2 samples. (The analysis'
// stats.median_ci computes the same; it reads these figures from the JSON.)
std::optional<MedianCI> median_ci(std::vector<double> samples);

// The per-iteration real times (in seconds) of the repetitions that ran.
std::vector<double> repetition_seconds(const std::vector<Run>& repetitions);

// Adds the CI counters to the `median` aggregate of `aggregates`, from `repetitions`: ci_low and
// ci_high (the bounds of the median's real time, in the entry's time_unit), ci_coverage (0.969),
// resolved (1 or 0).
void add_ci(std::vector<Run>& aggregates, const std::vector<Run>& repetitions);

// Google Benchmark's aggregates (mean, median, stddev, cv; times and counters) of the repetitions
// that ran, as its ComputeStats writes them, the median carrying the CI (add_ci); none under 2.
std::vector<Run> aggregates_of(const std::vector<Run>& repetitions);

// The blocks of the planned names (indices). Consecutive names form runs, split where the name
// without its variant changes once a run has kBlockCases cases (a shape's variants stay
// together), and where the baseline a case is set against changes (`against`: the index of the
// `baseline` case, a family's copy of its bytes, from Case::beside; kNoBaseline for none). The
// runs set against one baseline then make one block with it at its front, in the place of the
// first, so that "x of copy" pairs cases timed in one block's rounds (a slice step 1 and the
// expands beside the 4096^2 transposes, whose copy they share), while the block holds at most
// kPreparedCases cases set up and kPreparedBytes of operands (`bytes`, per case; 0 for one that is
// not set up on the host: a skip, a CUDA case, which the count leaves out): a run past that is a
// block of its own, set against a copy timed in another. A baseline with no case set against it
// is an ordinary case. A block past kPreparedBytes even so (a 2 GiB copy beside a 6 GiB triad,
// which would be set up again at every repetition) is split into blocks of one case each.
std::vector<std::vector<std::size_t>> blocks_of(const std::vector<std::string>& names, const std::vector<bool>& baseline,
                                                const std::vector<std::size_t>& against,
                                                const std::vector<std::size_t>& bytes);

// After a round, which of a block's cases finish (per case of the block): an open one that
// `halted` (failed, skipped, ran nothing, or at kMaxRepetitions), and an open one the rule is
// `done` with (resolved after kMinRepetitions), except a baseline while any other case of the
// block is open and neither done nor halted.
std::vector<bool> finished_after_round(const std::vector<bool>& baseline, const std::vector<bool>& open,
                                       const std::vector<bool>& done, const std::vector<bool>& halted);

}  // namespace flopscope::bench
