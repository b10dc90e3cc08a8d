#include "rounds.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace flopscope::bench {

namespace {

// P(Binomial(n, 1/2) < j).
double below(int n, int j) {
  double sum = 0, term = std::ldexp(1.0, -n);  // C(n, 0) / 2^n
  for (int i = 0; i < j; ++i) {
    sum += term;
    term = term * double(n - i) / double(i + 1);
  }
  return sum;
}

// Google Benchmark's statistics (src/statistics.cc), so that the aggregates read as its own.
double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

double median_of(std::vector<double> v) {
  if (v.size() < 3) return mean_of(v);
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = mean_of(v);
  double squares = 0;
  for (double x : v) squares += x * x;
  const double n = double(v.size());
  return std::sqrt(n / (n - 1) * (squares / n - mean * mean));
}

double cv_of(const std::vector<double>& v) { return v.size() < 2 ? 0 : stddev_of(v) / mean_of(v); }

struct Statistic {
  const char* name;
  benchmark::StatisticUnit unit;
  std::function<double(const std::vector<double>&)> compute;
};

const std::vector<Statistic>& statistics() {
  static const std::vector<Statistic> all = {
      {"mean", benchmark::kTime, mean_of},
      {"median", benchmark::kTime, [](const std::vector<double>& v) { return median_of(v); }},
      {"stddev", benchmark::kTime, stddev_of},
      {"cv", benchmark::kPercentage, cv_of},
  };
  return all;
}

// The name without its variant (the second field): cases that differ only in variant share it.
std::string without_variant(const std::string& name) {
  const std::size_t first = name.find('/');
  if (first == std::string::npos) return name;
  const std::size_t second = name.find('/', first + 1);
  return second == std::string::npos ? name.substr(0, first) : name.substr(0, first) + name.substr(second);
}

}  // namespace

double MedianCI::half_width() const {
  if (median == 0) return INFINITY;
  return std::max(median - low, high - median) / std::abs(median);
}

std::optional<MedianCI> median_ci(std::vector<double> samples) {
  const int n = int(samples.size());
  if (n < 2) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  int best = 1;
  for (int j = 1; j <= n / 2; ++j) {
    if (1 - 2 * below(n, j) < kCILevel) break;
    best = j;
  }
  MedianCI ci;
  ci.median = median_of(samples);
  ci.low = samples[std::size_t(best - 1)];
  ci.high = samples[std::size_t(n - best)];
  ci.coverage = 1 - 2 * below(n, best);
  ci.n = n;
  return ci;
}

std::vector<double> repetition_seconds(const std::vector<Run>& repetitions) {
  std::vector<double> seconds;
  for (const Run& run : repetitions)
    if (!run.error_occurred && run.run_type == Run::RT_Iteration && run.iterations > 0)
      seconds.push_back(run.real_accumulated_time / double(run.iterations));
  return seconds;
}

void add_ci(std::vector<Run>& aggregates, const std::vector<Run>& repetitions) {
  const auto ci = median_ci(repetition_seconds(repetitions));
  if (!ci) return;
  for (Run& run : aggregates) {
    if (run.run_type != Run::RT_Aggregate || run.aggregate_name != "median") continue;
    const double unit = benchmark::GetTimeUnitMultiplier(run.time_unit);
    run.counters["ci_low"] = benchmark::Counter(ci->low * unit);
    run.counters["ci_high"] = benchmark::Counter(ci->high * unit);
    run.counters["ci_coverage"] = benchmark::Counter(ci->coverage);
    run.counters["resolved"] = benchmark::Counter(ci->resolved() ? 1 : 0);
  }
}

std::vector<Run> aggregates_of(const std::vector<Run>& repetitions) {
  std::vector<const Run*> good;
  for (const Run& run : repetitions)
    if (!run.error_occurred && run.run_type == Run::RT_Iteration && run.iterations > 0) good.push_back(&run);
  if (good.size() < 2) return {};
  std::vector<double> real, cpu;
  std::map<std::string, std::vector<double>> counters;
  std::string label;
  for (const Run* run : good) {
    real.push_back(run->real_accumulated_time / double(run->iterations));
    cpu.push_back(run->cpu_accumulated_time / double(run->iterations));
    for (const auto& [name, counter] : run->counters) counters[name].push_back(counter.value);
    if (!run->report_label.empty()) label = run->report_label;
  }
  const Run& first = *good.front();
  const double n = double(good.size());
  std::vector<Run> out;
  for (const Statistic& stat : statistics()) {
    Run data;
    data.run_name = first.run_name;
    data.family_index = first.family_index;
    data.per_family_instance_index = first.per_family_instance_index;
    data.run_type = Run::RT_Aggregate;
    data.threads = first.threads;
    data.repetitions = std::int64_t(repetitions.size());
    data.repetition_index = Run::no_repetition_index;
    data.aggregate_name = stat.name;
    data.aggregate_unit = stat.unit;
    data.report_label = label;
    data.time_unit = first.time_unit;
    data.statistics = first.statistics;
    // Over N repetitions, as Google Benchmark counts them: the reporter divides by `iterations`.
    data.iterations = benchmark::IterationCount(good.size());
    const double scale = stat.unit == benchmark::kTime ? n : 1.0;
    data.real_accumulated_time = stat.compute(real) * scale;
    data.cpu_accumulated_time = stat.compute(cpu) * scale;
    for (const auto& [name, values] : counters) {
      const benchmark::Counter& like = first.counters.count(name) ? first.counters.at(name) : benchmark::Counter();
      data.counters[name] = benchmark::Counter(stat.compute(values), like.flags, like.oneK);
    }
    out.push_back(std::move(data));
  }
  add_ci(out, repetitions);
  return out;
}

std::vector<std::vector<std::size_t>> blocks_of(const std::vector<std::string>& names, const std::vector<bool>& baseline,
                                                const std::vector<std::size_t>& against,
                                                const std::vector<std::size_t>& bytes) {
  const std::size_t count = names.size();
  std::vector<bool> has_partners(count, false);
  for (std::size_t i = 0; i < count; ++i)
    if (against[i] != kNoBaseline) has_partners[against[i]] = true;
  // Runs of consecutive cases; a baseline with partners waits for its block.
  std::vector<std::vector<std::size_t>> runs;
  std::string last_key;
  std::size_t last_against = kNoBaseline;
  for (std::size_t i = 0; i < count; ++i) {
    if (baseline[i] && has_partners[i]) continue;
    const std::string key = without_variant(names[i]);
    if (runs.empty() || against[i] != last_against || (key != last_key && runs.back().size() >= kBlockCases))
      runs.emplace_back();
    runs.back().push_back(i);
    last_key = key;
    last_against = against[i];
  }
  auto add = [](std::size_t a, std::size_t b) { return b > SIZE_MAX - a ? SIZE_MAX : a + b; };
  // Cases a block keeps set up: those with bytes (not a skip, not a CUDA case: `bytes` 0).
  auto held = [&](const std::vector<std::size_t>& cases) {
    return std::size_t(std::count_if(cases.begin(), cases.end(), [&](std::size_t i) { return bytes[i] > 0; }));
  };
  std::vector<std::vector<std::size_t>> blocks;
  std::vector<std::size_t> block_bytes;
  std::map<std::size_t, std::size_t> home;  // baseline -> the block that holds it
  for (auto& run : runs) {
    std::size_t run_bytes = 0;
    for (std::size_t i : run) run_bytes = add(run_bytes, bytes[i]);
    const std::size_t base = against[run.front()];
    if (base != kNoBaseline) {
      const auto found = home.find(base);
      if (found == home.end()) {  // the baseline's block, at its first run's place
        home[base] = blocks.size();
        run.insert(run.begin(), base);
        run_bytes = add(run_bytes, bytes[base]);
      } else if (held(blocks[found->second]) + held(run) <= kPreparedCases &&
                 add(block_bytes[found->second], run_bytes) <= kPreparedBytes) {
        auto& block = blocks[found->second];
        block.insert(block.end(), run.begin(), run.end());
        block_bytes[found->second] = add(block_bytes[found->second], run_bytes);
        continue;
      }
    }
    blocks.push_back(std::move(run));
    block_bytes.push_back(run_bytes);
  }
  // A block too large to keep set up side by side: one case after another.
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t b = 0; b < blocks.size(); ++b)
    if (block_bytes[b] <= kPreparedBytes)
      out.push_back(std::move(blocks[b]));
    else
      for (std::size_t i : blocks[b]) out.push_back({i});
  return out;
}

std::vector<bool> finished_after_round(const std::vector<bool>& baseline, const std::vector<bool>& open,
                                       const std::vector<bool>& done, const std::vector<bool>& halted) {
  bool others_go_on = false;
  for (std::size_t i = 0; i < open.size(); ++i) others_go_on |= open[i] && !baseline[i] && !done[i] && !halted[i];
  std::vector<bool> finished(open.size(), false);
  for (std::size_t i = 0; i < open.size(); ++i)
    finished[i] = open[i] && (halted[i] || (done[i] && !(baseline[i] && others_go_on)));
  return finished;
}

}  // namespace flopscope::bench
