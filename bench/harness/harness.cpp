#include "harness.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#include "ceilings.hpp"
#include "context.hpp"
#include "describe.hpp"
#include "json_file.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/kernels/fill.hpp"
#include "rounds.hpp"
#include "run_case.hpp"
#include "thread_pools.hpp"

namespace flopscope::bench {

// ---- points ----------------------------------------------------------------------------------

std::int64_t Point::integer(const std::string& axis) const { return ints(axis).at(0); }

const std::vector<std::int64_t>& Point::ints(const std::string& axis) const {
  return std::get<std::vector<std::int64_t>>(values.at(axis));
}

const std::string& Point::choice(const std::string& axis) const { return std::get<std::string>(values.at(axis)); }

// ---- expansion -------------------------------------------------------------------------------

namespace {

const Axis& axis_named(const Family& family, const std::string& name) {
  for (const Axis& axis : family.axes)
    if (axis.name == name) return axis;
  throw std::logic_error(family.binary + ": a bench takes axis '" + name + "', which the family does not declare");
}

// Calls visit(values) for every combination of the axes' values, the first axis outermost.
void product(const std::vector<std::pair<std::string, std::vector<AxisValue>>>& axes, std::size_t depth,
             std::map<std::string, AxisValue>& values, const std::function<void()>& visit) {
  if (depth == axes.size()) return visit();
  for (const AxisValue& value : axes[depth].second) {
    values[axes[depth].first] = value;
    product(axes, depth + 1, values, visit);
  }
}

}  // namespace

std::vector<std::pair<const DeviceContext*, Case>> expand(const Family& family, const Selection& selection,
                                                          const std::vector<DeviceContext>& devices) {
  std::vector<std::pair<const DeviceContext*, Case>> cases;
  std::set<std::string> names;
  for (const DeviceContext& device : devices) {
    for (const Bench& bench : family.benches) {
      std::vector<VariantRow> variants;
      for (auto& row : bench.variants(device.device.kind))
        if (selected(selection, row)) variants.push_back(std::move(row));
      const std::vector<DType> dtypes = bench.uses_dtypes ? selection.dtypes : std::vector<DType>{selection.dtypes.front()};
      for (DType dtype : dtypes) {
        std::vector<std::pair<std::string, std::vector<AxisValue>>> axes;
        for (const std::string& name : bench.axes) {
          auto given = selection.axes.find(name);
          if (given != selection.axes.end()) {
            axes.emplace_back(name, given->second);
            continue;
          }
          const Axis& axis = axis_named(family, name);
          const bool emptied = std::any_of(axis.none_if_given.begin(), axis.none_if_given.end(),
                                           [&](const std::string& other) { return selection.axes.contains(other); });
          axes.emplace_back(name, emptied ? std::vector<AxisValue>{} : axis.defaults(device, dtype));
        }
        Point point{&device, "", dtype, {}};
        product(axes, 0, point.values, [&] {
          for (const VariantRow& variant : variants) {
            point.variant = variant.name;
            std::optional<Case> built = bench.build(point);
            if (!built || !names.insert(built->name.str()).second) continue;
            built->role = variant.role;
            built->group = bench.name;
            cases.emplace_back(&device, std::move(*built));
          }
        });
      }
    }
  }
  return cases;
}

// ---- running ---------------------------------------------------------------------------------

namespace {

// The console: one line per case, at most 120 columns: its name (Google Benchmark's suffixes
// dropped, the middle elided where too long), the median time (or the only one), the rate that
// matters (GB/s for bound=memory, GFLOP/s or TFLOP/s for bound=compute), the percentage of the
// measured ceiling (else of the theoretical peak), and the 95% CI of the median against it
// ("-1.2/+2.0%"; "unresolved" past +-3% at 95%; the coverage where fewer than 6 repetitions
// reach no 95% interval); a skip or failure is one line with its reason. The full record is
// the JSON file.
class CaseLines {
 public:
  static constexpr std::size_t kColumns = 120;
  static constexpr std::size_t kNameWidth = 56;

  // Called with each ReportRuns batch (repetitions, then their aggregates); prints what is complete.
  void report(std::FILE* out, const std::vector<benchmark::BenchmarkReporter::Run>& runs) {
    using Run = benchmark::BenchmarkReporter::Run;
    std::size_t good = 0, total = 0;
    const Run* first_error = nullptr;
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Aggregate) continue;
      ++total;
      if (run.error_occurred && !first_error) first_error = &run;
      if (!run.error_occurred) ++good;
    }
    if (total > 0) {  // the repetitions: a line now unless aggregates follow
      if (good == 0) return line(out, shown(runs.front()), first_error->error_message);
      if (good >= 2) return;  // the aggregates' batch prints it
      for (const Run& run : runs)
        if (!run.error_occurred) return result(out, run);
      return;
    }
    for (const Run& run : runs)
      if (run.aggregate_name == "median") return result(out, run);
  }

  // The name without Google Benchmark's suffixes, elided in the middle to `width` columns.
  static std::string shown(const benchmark::BenchmarkReporter::Run& run, std::size_t width = kNameWidth) {
    std::string name = run.run_name.function_name;
    if (name.size() <= width) return name;
    const std::size_t head = (width - 3) / 2, tail = width - 3 - head;
    return name.substr(0, head) + "..." + name.substr(name.size() - tail);
  }

 private:
  static void line(std::FILE* out, const std::string& name, const std::string& what) {
    std::string text = name + "  " + what;
    if (text.size() > kColumns) text = text.substr(0, kColumns - 3) + "...";
    std::fprintf(out, "%s\n", text.c_str());
    std::fflush(out);
  }
  static std::string seconds_text(double seconds) {
    char text[32];
    if (seconds < 1e-6)
      std::snprintf(text, sizeof text, "%.1f ns", seconds * 1e9);
    else if (seconds < 1e-3)
      std::snprintf(text, sizeof text, "%.2f us", seconds * 1e6);
    else if (seconds < 1)
      std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
    else
      std::snprintf(text, sizeof text, "%.3f s", seconds);
    return text;
  }
  // "-1.2/+2.0%", "unresolved", "-4/+9% (75%)"; "" without a CI (one repetition).
  static std::string ci_text(const benchmark::BenchmarkReporter::Run& run) {
    auto counter = [&](const char* name) -> std::optional<double> {
      auto it = run.counters.find(name);
      return it == run.counters.end() ? std::nullopt : std::optional<double>(it->second.value);
    };
    const auto low = counter("ci_low"), high = counter("ci_high"), coverage = counter("ci_coverage");
    const double median = run.GetAdjustedRealTime();
    if (!low || !high || !coverage || median <= 0) return "";
    char text[48];
    const double down = 100 * (median - *low) / median, up = 100 * (*high - median) / median;
    if (*coverage < kCILevel)
      std::snprintf(text, sizeof text, "-%.0f/+%.0f%% (%.0f%%)", down, up, 100 * *coverage);
    else if (counter("resolved").value_or(0) == 0)
      std::snprintf(text, sizeof text, "unresolved");
    else
      std::snprintf(text, sizeof text, "-%.1f/+%.1f%%", down, up);
    return text;
  }
  static void result(std::FILE* out, const benchmark::BenchmarkReporter::Run& run) {
    auto counter = [&](const char* name) -> std::optional<double> {
      auto it = run.counters.find(name);
      return it == run.counters.end() ? std::nullopt : std::optional<double>(it->second.value);
    };
    const bool compute = run.report_label.find("bound=compute") != std::string::npos;
    char rate[32] = "";
    const double flops = counter("flops_per_second").value_or(0), bytes = counter("bytes_per_second").value_or(0);
    if (compute && flops > 0)
      std::snprintf(rate, sizeof rate, flops >= 1e12 ? "%.2f TFLOP/s" : "%.1f GFLOP/s", flops >= 1e12 ? flops / 1e12 : flops / 1e9);
    else if (bytes > 0)
      std::snprintf(rate, sizeof rate, "%.1f GB/s", bytes / 1e9);
    std::string percent;
    const char* kind = compute ? "flops" : "bw";
    char text[48];
    if (auto pct = counter((std::string("pct_ceiling_") + kind).c_str())) {
      std::snprintf(text, sizeof text, "%.1f%% of ceiling", *pct);
      percent = text;
    } else if (auto peak = counter((std::string("pct_peak_") + kind).c_str())) {
      std::snprintf(text, sizeof text, "%.1f%% of peak", *peak);
      percent = text;
    }
    const double seconds = run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
    std::string name = shown(run);
    name.resize(kNameWidth, ' ');
    char rest[112];
    std::snprintf(rest, sizeof rest, "%10s %15s %17s %15s", seconds_text(seconds).c_str(), rate, percent.c_str(),
                  ci_text(run).c_str());
    line(out, name, rest);
  }
};

class ProgressReporter : public benchmark::BenchmarkReporter {
 public:
  ProgressReporter(std::string binary, std::size_t total, const std::string& format, CeilingsCollector* ceilings)
      : binary_(std::move(binary)), total_(total), ceilings_(ceilings) {
    if (format == "json")
      inner_ = std::make_unique<benchmark::JSONReporter>();
    else if (format == "csv") {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // deprecated, still a documented format
      inner_ = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
    }
  }
  bool ReportContext(const Context& context) override {
    if (!inner_) return true;  // the console: the devices' lines are printed already
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& batch) override {
    // Google Benchmark's own aggregates (fixed repetitions) get the CI that the rounds' carry.
    std::vector<Run> runs = batch;
    if (!runs.empty() && runs.front().run_type == Run::RT_Aggregate)
      add_ci(runs, repetitions_);
    else
      repetitions_ = runs;
    if (inner_)
      inner_->ReportRuns(runs);
    else
      lines_.report(stdout, runs);
    for (const auto& run : runs) {
      if (ceilings_) try {
          ceilings_->add(run);
        } catch (const std::exception& error) {
          if (!ceilings_error_) ceilings_error_ = error.what();
        }
      std::string name = run.run_name.str();
      if (name == last_) continue;
      last_ = name;
      ++done_;
      // One progress line per case: done/total, elapsed, ETA (at this binary's mean pace so far).
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      const double eta = done_ < total_ ? elapsed / double(done_) * double(total_ - done_) : 0;
      std::fprintf(stderr, "[%s] %zu/%zu  %.1f s  ETA %.0f s  %s\n", binary_.c_str(), done_, total_, elapsed, eta,
                   CaseLines::shown(run, 64).c_str());
    }
  }
  void Finalize() override {
    if (inner_) inner_->Finalize();
  }
  const std::optional<std::string>& ceilings_error() const { return ceilings_error_; }

 private:
  std::optional<std::string> ceilings_error_;
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;  // --benchmark_format=json|csv; else lines_
  CaseLines lines_;
  std::vector<Run> repetitions_;  // the last batch of repetitions
  std::string binary_;
  std::size_t total_, done_ = 0;
  CeilingsCollector* ceilings_;
  std::string last_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// ---- the stopping rule's rounds (rounds.hpp, Note [the stopping rule]) ----------------------

// Google Benchmark's display reporter for one round: keeps what it reports, by case name.
class RoundCollector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& context) override {
    if (!context_) context_.emplace(context);
    return true;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (Run run : runs) {
      run.run_name.iterations.clear();  // a count fixed after the first round is not part of the name
      runs_[run.run_name.function_name].push_back(std::move(run));
    }
  }
  std::optional<Context> context_;
  std::map<std::string, std::vector<Run>> runs_;
};

// `name` as a POSIX extended regular expression that matches it literally.
std::string literal(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::string_view(".[]()*+?{}|^$\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// Runs the cases `names` (in planned order) by the stopping rule: per block (blocks_of), rounds
// of one repetition of each open case until each is resolved, failed or skipped, or at
// kMaxRepetitions (a baseline: while the others go on, finished_after_round). Each finished case
// goes to `display` (repetitions, then aggregates) and to `whole`; the first round's context goes
// to both before.
//
// A case's first round is Google Benchmark's usual one: trials of 1, 10, 100... iterations (which
// warm it up) until a run lasts --benchmark_min_time, and that run is its first repetition. Its
// later rounds run that iteration count at once (`registered`'s Iterations(), as Google Benchmark
// itself does for the repetitions after the first), so that a repetition costs what it measures:
// with a search and a warm-up at every round, the default suite spent two thirds of its time
// outside the timed loops (1069 s for 356 s timed, Xeon VM, 2026-12-06).
void run_by_rule(const std::vector<std::string>& names, const std::vector<bool>& baseline,
                 const std::vector<std::vector<std::size_t>>& blocks,
                 const std::vector<benchmark::internal::Benchmark*>& registered,
                 benchmark::BenchmarkReporter& display, WholeJsonFile* whole) {
  RoundCollector collector;
  bool context_sent = false;
  for (const auto& block : blocks) {
    std::vector<std::vector<Run>> repetitions(block.size());
    std::vector<bool> open(block.size(), true);
    auto finish = [&](std::size_t i) {
      open[i] = false;
      std::vector<Run>& reps = repetitions[i];
      for (std::size_t k = 0; k < reps.size(); ++k) {
        reps[k].repetition_index = std::int64_t(k);
        reps[k].repetitions = std::int64_t(reps.size());
      }
      std::vector<Run> aggregates = aggregates_of(reps);
      display.ReportRuns(reps);
      if (!aggregates.empty()) display.ReportRuns(aggregates);
      if (whole) {
        std::vector<Run> entries = reps;
        entries.insert(entries.end(), aggregates.begin(), aggregates.end());
        whole->set_case(std::move(entries));
      }
    };
    for (int round = 0; round < kMaxRepetitions; ++round) {
      std::string spec;
      for (std::size_t i = 0; i < block.size(); ++i)
        if (open[i]) spec += (spec.empty() ? "" : "|") + literal(names[block[i]]);
      if (spec.empty()) break;
      collector.runs_.clear();
      benchmark::RunSpecifiedBenchmarks(&collector, "^(" + spec + ")/(iterations:[0-9]+/)?(real_time|manual_time)$");
      if (!context_sent && collector.context_) {
        display.ReportContext(*collector.context_);
        if (whole) whole->ReportContext(*collector.context_);
        context_sent = true;
      }
      std::vector<bool> done(block.size(), false), halted(block.size(), false);
      for (std::size_t i = 0; i < block.size(); ++i) {
        if (!open[i]) continue;
        const auto& got = collector.runs_[names[block[i]]];
        std::vector<Run>& reps = repetitions[i];
        for (const Run& run : got)
          if (run.run_type == Run::RT_Iteration) reps.push_back(run);
        const bool error = std::any_of(got.begin(), got.end(), [](const Run& r) { return r.error_occurred; });
        const auto ci = median_ci(repetition_seconds(reps));
        const int n = int(reps.size());
        if (round == 0 && registered[block[i]] && !reps.empty() && reps.front().iterations > 0)
          registered[block[i]]->Iterations(reps.front().iterations);
        halted[i] = got.empty() || error || n >= kMaxRepetitions;
        done[i] = n >= kMinRepetitions && ci && ci->resolved();
      }
      std::vector<bool> in_block_baseline(block.size());
      for (std::size_t i = 0; i < block.size(); ++i) in_block_baseline[i] = baseline[block[i]];
      const std::vector<bool> finished = finished_after_round(in_block_baseline, open, done, halted);
      for (std::size_t i = 0; i < block.size(); ++i)
        if (finished[i]) finish(i);
    }
    for (std::size_t i = 0; i < block.size(); ++i)
      if (open[i]) finish(i);
  }
}

// The drift check: a memcpy of 64 MiB (32 times L2 here), timed by the
// stopping rule, at a binary's start and end; its median rate and the rate's 95% CI go into the
// JSON context (flopscope_drift_start, flopscope_drift_end) and the report says where the two
// differ by more than their CIs.
nlohmann::json drift_probe(double min_time) {
  constexpr std::size_t kBytes = std::size_t(64) << 20;
  std::vector<unsigned char> source(kBytes), target(kBytes);
  for (std::size_t i = 0; i < kBytes; i += 4096) source[i] = static_cast<unsigned char>(i >> 12);
  std::memcpy(target.data(), source.data(), kBytes);  // every page touched before the clock
  std::vector<double> seconds;
  std::optional<MedianCI> ci;
  while (int(seconds.size()) < kMaxRepetitions) {
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    int copies = 0;
    do {
      std::memcpy(target.data(), source.data(), kBytes);
      benchmark::ClobberMemory();
      ++copies;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < min_time);
    seconds.push_back(elapsed / copies);
    ci = median_ci(seconds);
    if (int(seconds.size()) >= kMinRepetitions && ci && ci->resolved()) break;
  }
  const double moved = 2.0 * double(kBytes);  // DESIGN.md: a copy reads and writes every byte
  return {{"probe", "memcpy of 64 MiB"}, {"bytes_per_second", moved / ci->median},
          {"ci_low", moved / ci->high},   {"ci_high", moved / ci->low},
          {"repetitions", seconds.size()}, {"resolved", ci->resolved()}};
}

// Which of `names` Google Benchmark's filter selects (same rules: "-" negates, "all" = all);
// nullopt for a filter that is not a regular expression.
std::optional<std::vector<bool>> selected_by(const std::vector<std::string>& names, std::string filter) {
  if (filter.empty() || filter == "all" || filter == ".") return std::vector<bool>(names.size(), true);
  bool negate = filter[0] == '-';
  if (negate) filter.erase(0, 1);
  try {
    std::regex re(filter, std::regex::extended);
    std::vector<bool> selected;
    for (const auto& name : names) selected.push_back(std::regex_search(name, re) != negate);
    return selected;
  } catch (const std::regex_error&) {
    return std::nullopt;
  }
}

std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  std::string value;
  for (const auto& arg : args)
    if (arg.rfind(flag + "=", 0) == 0) value = arg.substr(flag.size() + 1);
  return value;
}

}  // namespace

int run_family(int argc, char** argv, const Family& family) {
  cap_idle_spin(argv);  // Note [idle thread pools]
  const std::string& binary = family.binary;
  Selection selection = parse_flags(argc, argv, family);
  kernels::set_huge_pages(selection.huge_pages);
  const std::string out = flag_value(selection.benchmark_args, "--benchmark_out");
  if (!out.empty() && !std::ofstream(out, std::ios::app)) usage_error(binary, "cannot write --benchmark_out=" + out);

  const char* warmup = std::getenv("FLOPSCOPE_WARMUP_S");
  // --describe measures nothing: no warm-up before the clock is read.
  const double warmup_seconds = selection.describe ? 0.0 : warmup ? std::atof(warmup) : 1.0;
  std::vector<DeviceContext> devices;
  for (const Device& device : selection.devices)
    devices.push_back(device.is_cpu() ? probe_cpu(warmup_seconds) : probe_cuda(device, !selection.describe));

  std::vector<std::pair<const DeviceContext*, Case>> cases;
  try {
    cases = expand(family, selection, devices);
  } catch (const SizeOverflow& error) {
    usage_error(binary, std::string("a size is too large: ") + error.what());
  } catch (const std::invalid_argument& error) {  // a value a family's build() refuses
    usage_error(binary, error.what());
  }
  std::vector<std::string> names;
  std::vector<kernels::Role> roles;
  for (const auto& entry : cases) {
    names.push_back(entry.second.name.str());
    roles.push_back(entry.second.role);
  }
  if (names.empty())
    usage_error(binary, "no case selected (check --variants, --roles, --dtypes and --devices: a variant runs on its own device)");
  std::vector<std::string> kept = selection.benchmark_args;
  // Warm-up before each case unless the user chose: set as a flag, since a per-benchmark
  // MinWarmUpTime() would add "/min_warmup_time:..." to every name. Not where a CUDA case runs:
  // Google Benchmark's warm-up would call it with iteration counts sized by its GPU time (each
  // timed run costs its wall time, far more for a short kernel), and a CUDA case warms up at its
  // set-up anyway.
  const bool any_cuda = std::any_of(cases.begin(), cases.end(), [](const auto& dc) {
    return dc.first->device.is_cuda() && !dc.first->unavailable;
  });
  // The stopping rule (rounds.hpp) unless the user fixes the repetitions (or lists the cases, or
  // writes another format than JSON): the harness runs the rounds and writes the JSON itself, so
  // Google Benchmark gets neither --benchmark_out nor its own random interleaving. Under the rule a
  // case warms up in its first round's trials and, at each later round, by one untimed run
  // (time_cpu): a warm-up flag would cost --benchmark_min_warmup_time at every round.
  const std::string out_format = flag_value(kept, "--benchmark_out_format");
  const bool by_rule = flag_value(kept, "--benchmark_repetitions").empty() &&
                       flag_value(kept, "--benchmark_list_tests").empty() && (out_format.empty() || out_format == "json");
  if (flag_value(kept, "--benchmark_min_warmup_time").empty() && !any_cuda && !by_rule)
    kept.push_back("--benchmark_min_warmup_time=0.05");
  if (by_rule) {
    std::erase_if(kept, [](const std::string& arg) {
      return arg.rfind("--benchmark_out", 0) == 0 || arg.rfind("--benchmark_enable_random_interleaving", 0) == 0;
    });
    if (flag_value(kept, "--benchmark_min_time").empty())
      kept.push_back("--benchmark_min_time=" + std::to_string(kRuleMinTime));
  }
  const std::string min_time = flag_value(kept, "--benchmark_min_time");
  set_cuda_budget(min_time.empty() ? 0.5 : std::max(std::atof(min_time.c_str()), 0.0));
  const std::string filter = flag_value(kept, "--benchmark_filter");
  const auto selected = selected_by(names, filter);
  if (!selected) usage_error(binary, "--benchmark_filter='" + filter + "' is not a regular expression");
  const std::size_t selected_count = std::size_t(std::count(selected->begin(), selected->end(), true));
  if (selected_count == 0)
    usage_error(binary, "--benchmark_filter='" + filter + "' matches none of the " + std::to_string(names.size()) +
                            " cases (e.g. " + names.front() + ")");
  // The stopping rule's cases, in planned order, and the blocks whose rounds they run in.
  std::vector<std::string> chosen;
  std::vector<bool> baseline;
  std::vector<std::size_t> bytes;
  std::map<std::string, std::size_t> chosen_index;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if ((*selected)[i]) {
      chosen_index[names[i]] = chosen.size();
      chosen.push_back(names[i]);
      baseline.push_back(roles[i] == kernels::Role::baseline);
      // What it keeps set up (run_case.cpp): nothing for a skip, nothing on the host for a CUDA case.
      const bool held = cases[i].first->device.is_cpu() && !cases[i].second.skip;
      bytes.push_back(held ? case_bytes(cases[i].second) : 0);
    }
  std::vector<std::size_t> against;  // the chosen baseline each chosen case is set against, or kNoBaseline
  for (std::size_t i = 0; i < cases.size(); ++i)
    if ((*selected)[i]) {
      const auto found = chosen_index.find(cases[i].second.beside);
      against.push_back(found != chosen_index.end() && baseline[found->second] ? found->second : kNoBaseline);
    }
  std::vector<std::vector<std::size_t>> blocks;
  std::vector<std::optional<std::size_t>> block_of(chosen.size());
  if (by_rule) {
    blocks = blocks_of(chosen, baseline, against, bytes);
    for (std::size_t b = 0; b < blocks.size(); ++b)
      for (std::size_t i : blocks[b]) block_of[i] = b;
  }
  // What will run, in order: the --describe document, or the context's "variants" and "cases".
  PlannedCases planned;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if ((*selected)[i]) planned.push_back(cases[i]);
  if (selection.describe) {
    std::printf("%s\n", describe_json(family, selection, devices, planned, block_of).dump(1).c_str());
    return 0;
  }
  const std::string context = context_json(binary, selection, devices, variants_json(family, devices, planned),
                                           cases_json(planned, block_of));
  planned.clear();

  std::vector<benchmark::internal::Benchmark*> chosen_registered;  // null: its iteration count stays as registered
  std::map<std::string, CeilingsCollector::Label> ceiling_labels;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto& [device, c] = cases[i];
    const std::string name = c.name.str();
    if (c.measures) ceiling_labels[name] = {device->device.str(), *c.measures};
    auto shared = std::make_shared<const Case>(std::move(c));
    const DeviceContext* ctx = device;
    const CudaTiming timing{selection.hot, selection.blocking};
    auto* registered = benchmark::RegisterBenchmark(
        name.c_str(), [shared, ctx, timing](benchmark::State& state) { run_case(state, *ctx, *shared, timing); });
    if (ctx->device.is_cuda())  // one Google Benchmark iteration of many timed runs (cuda.hpp's Timer)
      registered->UseManualTime()->Iterations(1);
    else
      registered->UseRealTime();  // the work runs on every OpenMP thread, not just this one
    registered->Unit(benchmark::kMicrosecond);
    if ((*selected)[i]) chosen_registered.push_back(ctx->device.is_cuda() ? nullptr : registered);
  }
  // The devices' lines once every flag is known good, so that a usage error stays one line.
  for (const auto& line : device_lines(devices)) std::fprintf(stderr, "%s: %s\n", binary.c_str(), line.c_str());

  std::vector<char*> args;
  for (auto& arg : kept) args.push_back(arg.data());
  int benchmark_argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&benchmark_argc, args.data());
  benchmark::AddCustomContext("flopscope", context);

  std::string format = flag_value(kept, "--benchmark_format");
  std::optional<CeilingsCollector> ceilings;
  if (selection.write_ceilings) {
    ceilings.emplace(ceiling_labels, *selection.write_ceilings, selection.keep_ceilings, devices,
                     out.empty() ? binary : out);
    try {
      ceilings->prepare();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "%s: %s\n", binary.c_str(), error.what());
      return 2;
    }
  }
  ProgressReporter display(binary, selected_count, format.empty() ? "console" : format, ceilings ? &*ceilings : nullptr);
  std::optional<WholeJsonFile> whole;
  if (!out.empty() && (out_format.empty() || out_format == "json")) whole.emplace(out);
  // The drift check, where a JSON file is written and the CPU runs: before the first case.
  const bool drift = whole && std::any_of(devices.begin(), devices.end(), [](const DeviceContext& d) {
    return d.device.is_cpu() && !d.unavailable;
  });
  if (drift) benchmark::AddCustomContext("flopscope_drift_start", drift_probe(kRuleMinTime).dump());
  if (by_rule) {
    run_by_rule(chosen, baseline, blocks, chosen_registered, display, whole ? &*whole : nullptr);
    display.Finalize();
  } else {
    benchmark::RunSpecifiedBenchmarks(&display, whole ? &*whole : nullptr);
  }
  if (drift) benchmark::AddCustomContext("flopscope_drift_end", drift_probe(kRuleMinTime).dump());
  if (whole) whole->Finalize();  // again where Google Benchmark finalized it: the context has the end now
  benchmark::Shutdown();
  int status = 0;
  if (whole && whole->error()) {
    std::fprintf(stderr, "%s: %s\n", binary.c_str(), whole->error()->c_str());
    status = 2;
  }
  if (display.ceilings_error()) {
    std::fprintf(stderr, "%s: %s\n", binary.c_str(), display.ceilings_error()->c_str());
    status = 2;
  }
  if (ceilings)
    for (const auto& line : ceilings->lines()) std::fprintf(stderr, "%s: %s\n", binary.c_str(), line.c_str());
  return status;
}

}  // namespace flopscope::bench
