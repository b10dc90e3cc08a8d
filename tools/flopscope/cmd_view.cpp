// flopscope view: is an einops rearrange of a contiguous tensor a view (its strides), or does it
// need a copy (the bytes that copy moves, lib's strided_copy_cost), and, given a run directory,
// the time that the run's measured bench_strided rates predict for that copy. A view that is not
// contiguous (b t (h d) -> b h t d) is copied later, by .contiguous(): that copy is the one priced.
//   flopscope view "b t (h d) -> b h t d" --dims b=8,t=1024,h=12,d=64 [--dtype bf16] [--run RUN_DIR] [--json]
// The prediction takes the measured permutation most like this one: both are reduced to their
// coalesced form (size-1 dimensions dropped, source dimensions that stay adjacent and in order
// merged: (b t h d) -> (b h t d) is the permutation 0 2 1 3 of 4 dimensions, a transpose is 1 0),
// the same coalesced permutation if the run has one, else any, and among those the case of the
// nearest element count, in this dtype where the run has it; its fastest variant's bytes/s.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/accounting.hpp"
#include "flopscope/einops.hpp"
#include "flopscope/sizes.hpp"
#include "run_cases.hpp"

namespace flopscope::cli {

using nlohmann::json;
namespace {

// "b=8,t=1024,h=12,d=64".
AxisLengths dims_option(const std::string& text) {
  AxisLengths out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError{"--dims: expected NAME=LENGTH[,NAME=LENGTH...] such as b=8,t=1024 (got '" + text + "')"};
    const std::string name = item.substr(0, eq);
    if (std::any_of(out.begin(), out.end(), [&](const auto& given) { return given.first == name; }))
      throw UsageError{"--dims: axis '" + name + "' given twice"};
    out.emplace_back(name, positive_count("--dims " + name, item.substr(eq + 1)));
    start = comma + 1;
  }
  return out;
}

// A permutation of a contiguous source, coalesced: sizes in source order (size-1 dimensions
// dropped, adjacent runs merged) and the output's order of them.
struct Coalesced {
  Shape sizes;
  std::vector<std::int64_t> order;
  std::int64_t elements = 1;
  bool operator==(const Coalesced& other) const { return order == other.order; }
};

Coalesced coalesce(const Shape& source, const std::vector<std::int64_t>& order) {
  Coalesced out;
  std::vector<std::int64_t> kept;  // the output's order, size-1 source dimensions dropped
  for (std::int64_t d : order)
    if (source[static_cast<std::size_t>(d)] != 1) kept.push_back(d);
  for (std::int64_t size : source) out.elements *= size;
  // Runs of consecutive source dimensions in the output become one dimension.
  std::vector<std::vector<std::int64_t>> runs;
  for (std::int64_t d : kept)
    if (!runs.empty() && runs.back().back() + 1 == d) runs.back().push_back(d);
    else runs.push_back({d});
  std::vector<std::size_t> by_source(runs.size());
  std::iota(by_source.begin(), by_source.end(), 0);
  std::sort(by_source.begin(), by_source.end(), [&](std::size_t a, std::size_t b) { return runs[a][0] < runs[b][0]; });
  out.sizes.resize(runs.size());
  out.order.resize(runs.size());
  for (std::size_t rank = 0; rank < by_source.size(); ++rank) {
    const auto& run = runs[by_source[rank]];
    std::int64_t size = 1;
    for (std::int64_t d : run) size *= source[static_cast<std::size_t>(d)];
    out.sizes[rank] = size;
    out.order[by_source[rank]] = static_cast<std::int64_t>(rank);
  }
  return out;
}

// The plan's copy as a permutation of its contiguous source: the permuted view's dimensions
// ordered by stride (largest first) are the source's.
Coalesced plan_permutation(const RearrangePlan& plan) {
  const auto n = plan.permuted_shape.size();
  std::vector<std::int64_t> by_stride(n);
  std::iota(by_stride.begin(), by_stride.end(), 0);
  std::stable_sort(by_stride.begin(), by_stride.end(), [&](std::int64_t a, std::int64_t b) {
    return plan.permuted_strides[static_cast<std::size_t>(a)] > plan.permuted_strides[static_cast<std::size_t>(b)];
  });
  Shape source(n);
  std::vector<std::int64_t> order(n);
  for (std::size_t rank = 0; rank < n; ++rank) {
    source[rank] = plan.permuted_shape[static_cast<std::size_t>(by_stride[rank])];
    order[static_cast<std::size_t>(by_stride[rank])] = static_cast<std::int64_t>(rank);
  }
  return coalesce(source, order);
}

// A measured bench_strided case as a permutation of its source; nullopt for the views that are
// none (slices, expands) and for the contiguous-copy baselines.
std::optional<Coalesced> case_permutation(const bench::CaseName& name) {
  std::string view, perm;
  for (const auto& [key, value] : name.extras) {
    if (key == "view") view = value;
    if (key == "perm") perm = value;
  }
  Shape source;
  for (const auto& entry : name.shape) source.push_back(entry.second);
  std::vector<std::int64_t> order;
  if (view == "transpose" && source.size() == 2) order = {1, 0};
  else if ((view == "split_heads" || view == "merge_heads") && source.size() == 4) order = {0, 2, 1, 3};
  else if (view == "permute") {
    for (std::size_t start = 0; start < perm.size();) {
      const std::size_t dot = std::min(perm.find('.', start), perm.size());
      const auto index = parse_count(perm.substr(start, dot - start));
      if (!index || *index >= static_cast<std::int64_t>(source.size())) return std::nullopt;
      order.push_back(*index);
      start = dot + 1;
    }
    if (order.size() != source.size()) return std::nullopt;
  } else {
    return std::nullopt;
  }
  return coalesce(source, order);
}

std::string order_text(const std::vector<std::int64_t>& order) {
  std::string out;
  for (std::int64_t d : order) out += (out.empty() ? "" : " ") + std::to_string(d);
  return out;
}

struct Prediction {
  std::string device, case_name, variant, match;  // match: why this case
  double bytes_per_second = 0, seconds = 0;
};

// Per device of the run: the measured case most like `ours` and the time its best rate predicts.
std::vector<Prediction> predict(const std::string& run_dir, const Coalesced& ours, DType dtype, std::int64_t bytes) {
  const RunCases run = read_run_cases("--run", run_dir);
  struct Candidate {
    Coalesced permutation;
    std::string name, variant, dtype;
    double rate = 0;
  };
  std::map<std::string, std::map<std::string, Candidate>> by_device;  // device -> case (less variant) -> best
  for (const RunCase& c : run.cases) {
    if (c.name.family != "strided" || !c.entry) continue;
    const double rate = c.entry->value("bytes_per_second", 0.0);
    const auto permutation = case_permutation(c.name);
    if (!permutation || !(rate > 0)) continue;
    bench::CaseName key = c.name;
    key.variant = "*";
    Candidate& best = by_device[c.name.device][key.str()];
    if (rate > best.rate) best = {*permutation, c.name.str(), c.name.variant, c.name.dtype, rate};
  }
  if (by_device.empty())
    throw UsageError{"--run: no measured permutation in '" + run_dir + "' (" + std::to_string(run.paths.size()) +
                     " benchmark JSON files; run bench_strided first)"};
  std::vector<Prediction> out;
  for (const auto& [device, cases] : by_device) {
    const Candidate* chosen = nullptr;
    double chosen_score = 0;
    for (const auto& [key, candidate] : cases) {
      // Same permutation first, then same dtype, then the nearest element count.
      const double score = (candidate.permutation == ours ? 0 : 1000) +
                           (candidate.dtype == dtype_name(dtype) ? 0 : 100) +
                           std::abs(std::log2(static_cast<double>(candidate.permutation.elements) /
                                              static_cast<double>(ours.elements)));
      if (!chosen || score < chosen_score) chosen = &candidate, chosen_score = score;
    }
    const bool same_kind = chosen->permutation == ours;
    const std::string match = std::string(same_kind ? "the same" : "no measured case of this") +
                              " coalesced permutation (" + order_text(ours.order) + ")" +
                              (same_kind ? "" : "; nearest case of another (" + order_text(chosen->permutation.order) +
                                                    ")") +
                              ", " + format_thousands(chosen->permutation.elements) + " elements measured vs " +
                              format_thousands(ours.elements) +
                              (chosen->dtype == dtype_name(dtype) ? "" : ", measured in " + chosen->dtype);
    out.push_back({device, chosen->name, chosen->variant, match, chosen->rate, static_cast<double>(bytes) / chosen->rate});
  }
  return out;
}

std::string strides_text(const Strides& strides) {
  std::string out = "(";
  for (std::size_t i = 0; i < strides.size(); ++i) out += (i ? ", " : "") + std::to_string(strides[i]);
  return out + ")";
}

}  // namespace

int cmd_view(const Args& args) {
  std::optional<std::string> pattern, run_dir;
  std::optional<AxisLengths> dims;
  DType dtype = DType::f32;
  bool as_json = false;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    if (name == "--dims") dims = dims_option(options.take_value());
    else if (name == "--dtype") dtype = dtype_option(options.take_value());
    else if (name == "--run") run_dir = options.take_value();
    else if (name == "--json") as_json = (options.take_flag(), true);
    else if (name.empty()) {
      const std::string text = options.take_positional();
      if (pattern) throw UsageError{"unexpected argument '" + text + "' (one pattern)"};
      pattern = text;
    } else options.unknown();
  }
  if (!pattern) throw UsageError{"needs a PATTERN, e.g. flopscope view \"b t (h d) -> b h t d\" --dims b=8,t=1024,h=12,d=64"};
  if (!dims) throw UsageError{"needs --dims NAME=LENGTH,... for every axis of the left side"};
  RearrangePlan plan;
  try {
    plan = rearrange_plan(*pattern, *dims);
  } catch (const PatternError& error) {
    throw UsageError{error.what()};
  } catch (const SizeOverflow& error) {
    throw UsageError{std::string("--dims: ") + error.what()};
  }
  const std::int64_t elements = checked_numel(plan.output_shape, "elements");
  const Cost copy = strided_copy_cost(plan.permuted_shape, plan.permuted_strides, dtype);
  const std::int64_t touched = strided_copy_bytes_touched(plan.permuted_shape, contiguous_strides(plan.permuted_shape),
                                                          0, plan.permuted_strides, 0, dtype, kCpuCacheLineBytes);
  // A copy now (not a view), or later: .contiguous() of a view whose strides are not row-major,
  // which the next kernel that needs contiguous input makes. Either reads the permuted view.
  const bool contiguous_view = plan.is_view && is_contiguous(plan.output_shape, plan.output_strides);
  const char* when = plan.is_view ? ".contiguous()" : "rearrange";
  std::vector<Prediction> predictions;
  if (run_dir && !contiguous_view) predictions = predict(*run_dir, plan_permutation(plan), dtype, copy.bytes);

  if (as_json) {
    json out = {{"pattern", *pattern},
                {"dtype", dtype_name(dtype)},
                {"input_shape", plan.input_shape},
                {"input_strides", plan.input_strides},
                {"output_shape", plan.output_shape},
                {"is_view", plan.is_view},
                {"output_strides", plan.output_strides},
                {"elements", elements}};
    out["contiguous"] = contiguous_view;
    if (!contiguous_view) {
      out["copy"] = {{"when", when}, {"source_shape", plan.permuted_shape}, {"source_strides", plan.permuted_strides},
                     {"bytes", copy.bytes}, {"bytes_touched_cpu", touched},
                     {"coalesced_permutation", plan_permutation(plan).order}};
      out["predictions"] = json::array();
      for (const auto& p : predictions)
        out["predictions"].push_back({{"device", p.device}, {"case", p.case_name}, {"variant", p.variant},
                                      {"match", p.match}, {"bytes_per_second", p.bytes_per_second},
                                      {"seconds", p.seconds}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("rearrange %s  (%s)\n", pattern->c_str(), std::string(dtype_name(dtype)).c_str());
  std::printf("  input   %-20s strides %s (contiguous)\n", shape_str(plan.input_shape).c_str(),
              strides_text(plan.input_strides).c_str());
  std::printf("  output  %-20s strides %s\n", shape_str(plan.output_shape).c_str(),
              strides_text(plan.output_strides).c_str());
  if (contiguous_view) {
    std::printf("a view, and contiguous: no copy, no bytes moved, now or at .contiguous()\n");
    if (run_dir) std::printf("(--run: nothing to predict)\n");
    return 0;
  }
  if (plan.is_view)
    std::printf("a view: no copy now (the output shares the input's storage with these strides); not contiguous, "
                "so .contiguous() (or a kernel that needs it) copies:\n");
  else
    std::printf("needs a copy: the permuted view %s with strides %s cannot be merged into %s without one\n",
                shape_str(plan.permuted_shape).c_str(), strides_text(plan.permuted_strides).c_str(),
                shape_str(plan.output_shape).c_str());
  std::printf("  bytes moved    %s (%s elements read once and written once; strided_copy_cost)\n",
              format_thousands(copy.bytes).c_str(), format_thousands(elements).c_str());
  std::printf("  bytes touched  %s in 64-byte lines (the cache-line model; a blocked copy gets near bytes moved)\n",
              format_thousands(touched).c_str());
  for (const auto& p : predictions)
    std::printf("  %s: %.3f ms at %.1f GB/s, measured by %s (%s)\n", p.device.c_str(), p.seconds * 1e3,
                p.bytes_per_second / 1e9, p.case_name.c_str(), p.match.c_str());
  return 0;
}

}  // namespace flopscope::cli
