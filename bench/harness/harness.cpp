#include "harness.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <set>

#include "ceilings.hpp"
#include "context.hpp"
#include "describe.hpp"
#include "flopscope/checked.hpp"
#include "run_case.hpp"

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
        if (selection.variants.empty() ||
            std::find(selection.variants.begin(), selection.variants.end(), row.name) != selection.variants.end())
          variants.push_back(std::move(row));
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

// Google Benchmark's console table without its context block: flopscope prints one line per
// device instead (the full context is in the JSON file).
class ConsoleTable : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;
  bool ReportContext(const Context& context) override {
    name_field_width_ = context.name_field_width;
    return true;
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
    else
      inner_ = std::make_unique<ConsoleTable>(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                                     : benchmark::ConsoleReporter::OO_Tabular);
  }
  bool ReportContext(const Context& context) override {
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    inner_->ReportRuns(runs);
    for (const auto& run : runs) {
      if (ceilings_) ceilings_->add(run);
      if (run.run_type == Run::RT_Aggregate) continue;
      std::string name = run.run_name.str();
      if (name == last_) continue;
      last_ = name;
      ++done_;
      std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
      std::fprintf(stderr, "[%s] %zu/%zu  %6.1f s  %s\n", binary_.c_str(), done_, total_, elapsed.count(), name.c_str());
    }
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  std::string binary_;
  std::size_t total_, done_ = 0;
  CeilingsCollector* ceilings_;
  std::string last_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

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
  const std::string& binary = family.binary;
  Selection selection = parse_flags(argc, argv, family);
  const std::string out = flag_value(selection.benchmark_args, "--benchmark_out");
  if (!out.empty() && !std::ofstream(out, std::ios::app)) usage_error(binary, "cannot write --benchmark_out=" + out);

  const char* warmup = std::getenv("FLOPSCOPE_WARMUP_S");
  // --describe measures nothing: no warm-up before the clock is read.
  const double warmup_seconds = selection.describe ? 0.0 : warmup ? std::atof(warmup) : 1.0;
  std::vector<DeviceContext> devices;
  for (const Device& device : selection.devices)
    devices.push_back(device.is_cpu() ? probe_cpu(warmup_seconds) : probe_cuda(device));

  std::vector<std::pair<const DeviceContext*, Case>> cases;
  try {
    cases = expand(family, selection, devices);
  } catch (const SizeOverflow& error) {
    usage_error(binary, std::string("a size is too large: ") + error.what());
  } catch (const std::invalid_argument& error) {  // a value a family's build() refuses
    usage_error(binary, error.what());
  }
  std::vector<std::string> names;
  for (const auto& entry : cases) names.push_back(entry.second.name.str());
  if (names.empty())
    usage_error(binary, "no case selected (check --variants, --dtypes and --devices: a variant runs on its own device)");
  std::vector<std::string> kept = selection.benchmark_args;
  // Warm-up before each case unless the user chose: set as a flag, since a per-benchmark
  // MinWarmUpTime() would add "/min_warmup_time:..." to every name.
  if (flag_value(kept, "--benchmark_min_warmup_time").empty()) kept.push_back("--benchmark_min_warmup_time=0.05");
  const std::string filter = flag_value(kept, "--benchmark_filter");
  const auto selected = selected_by(names, filter);
  if (!selected) usage_error(binary, "--benchmark_filter='" + filter + "' is not a regular expression");
  const std::size_t selected_count = std::size_t(std::count(selected->begin(), selected->end(), true));
  if (selected_count == 0)
    usage_error(binary, "--benchmark_filter='" + filter + "' matches none of the " + std::to_string(names.size()) +
                            " cases (e.g. " + names.front() + ")");
  // What will run, in order: the --describe document, or the context's "variants" and "cases".
  PlannedCases planned;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if ((*selected)[i]) planned.push_back(cases[i]);
  if (selection.describe) {
    std::printf("%s\n", describe_json(family, selection, devices, planned).dump(1).c_str());
    return 0;
  }
  const std::string context = context_json(binary, selection, devices, variants_json(family, devices, planned),
                                           cases_json(planned));
  planned.clear();

  std::map<std::string, CeilingsCollector::Label> ceiling_labels;
  for (auto& [device, c] : cases) {
    const std::string name = c.name.str();
    if (c.measures) ceiling_labels[name] = {device->device.str(), *c.measures};
    auto shared = std::make_shared<const Case>(std::move(c));
    const DeviceContext* ctx = device;
    const bool hot = selection.hot;
    auto* registered = benchmark::RegisterBenchmark(
        name.c_str(), [shared, ctx, hot](benchmark::State& state) { run_case(state, *ctx, *shared, hot); });
    if (ctx->device.is_cuda())
      registered->UseManualTime();
    else
      registered->UseRealTime();  // the work runs on every OpenMP thread, not just this one
    registered->Unit(benchmark::kMicrosecond);
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
  CeilingsCollector ceilings(ceiling_labels);
  ProgressReporter display(binary, selected_count, format.empty() ? "console" : format,
                           selection.write_ceilings ? &ceilings : nullptr);
  benchmark::RunSpecifiedBenchmarks(&display);
  benchmark::Shutdown();
  if (selection.write_ceilings) {
    try {
      for (const auto& line : ceilings.write(*selection.write_ceilings, selection.keep_ceilings, devices,
                                             out.empty() ? binary : out))
        std::fprintf(stderr, "%s: %s\n", binary.c_str(), line.c_str());
    } catch (const std::exception& error) {
      std::fprintf(stderr, "%s: %s\n", binary.c_str(), error.what());
      return 2;
    }
  }
  return 0;
}

}  // namespace flopscope::bench
