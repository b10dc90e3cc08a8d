#include "describe.hpp"

#include <algorithm>
#include <set>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "harness.hpp"

namespace flopscope::bench {

using nlohmann::json;

std::optional<CeilingRef> set_against(const Case& c) {
  if (c.measures) return std::nullopt;
  if (c.bound == Bound::memory) return CeilingRef{Bound::memory, "best"};
  if (c.compute.empty()) return std::nullopt;
  return CeilingRef{Bound::compute, c.compute};
}

namespace {

json ceiling_json(const std::optional<CeilingRef>& ref) {
  if (!ref) return nullptr;
  return {{"kind", ref->kind == Bound::memory ? "memory" : "compute"}, {"name", ref->name}};
}

const char* kind_name(Device::Kind kind) { return kind == Device::Kind::cpu ? "cpu" : "cuda"; }

const char* axis_kind(Axis::Kind kind) {
  switch (kind) {
    case Axis::Kind::shapes: return "shapes";
    case Axis::Kind::choices: return "choices";
    case Axis::Kind::permutation: return "permutation";
    case Axis::Kind::integers: break;
  }
  return "integers";
}

json value_json(const AxisValue& value, Axis::Kind kind) {
  if (const auto* word = std::get_if<std::string>(&value)) return *word;
  const auto& ints = std::get<std::vector<std::int64_t>>(value);
  if (kind == Axis::Kind::integers && ints.size() == 1) return ints[0];
  return ints;
}

// Why no case of a device kind can run: the reason of the first device of that kind that is
// unavailable, when none of that kind is available.
std::optional<std::string> kind_unavailable(Device::Kind kind, const std::vector<DeviceContext>& devices) {
  std::optional<std::string> reason;
  for (const auto& ctx : devices) {
    if (ctx.device.kind != kind) continue;
    if (!ctx.unavailable) return std::nullopt;
    if (!reason) reason = ctx.device.str() + ": " + *ctx.unavailable;
  }
  if (!reason) reason = std::string("no ") + kind_name(kind) + " device selected";
  return reason;
}

template <class T>
void push_unique(std::vector<T>& values, const T& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

// What each variant takes, whatever the command line selects: (kind, variant) -> the dtypes and
// compute modes of the cases its rows make (their applies()) over every dtype of the family at
// the axes' defaults, on one device of each kind this build has (probed where not selected).
struct Takes {
  std::vector<std::string> dtypes, modes;
};
std::map<std::pair<Device::Kind, std::string>, Takes> what_variants_take(const Family& family,
                                                                          const std::vector<DeviceContext>& devices) {
  std::vector<DeviceContext> one_of_each;
  for (Device::Kind kind : {Device::Kind::cpu, Device::Kind::cuda}) {
    const auto given = std::find_if(devices.begin(), devices.end(), [&](const DeviceContext& c) { return c.device.kind == kind; });
    if (given != devices.end()) {
      one_of_each.push_back(*given);
    } else if (kind == Device::Kind::cpu) {
      one_of_each.push_back(probe_cpu(0.0));
    } else {
#ifdef FLOPSCOPE_HAVE_CUDA
      one_of_each.push_back(probe_cuda(Device::cuda(0)));
#endif
    }
  }
  Selection every;
  every.dtypes = family.dtypes;
  for (const auto& ctx : one_of_each) every.devices.push_back(ctx.device);
  std::map<std::pair<Device::Kind, std::string>, Takes> takes;
  try {
    for (const auto& [ctx, c] : expand(family, every, one_of_each)) {
      Takes& t = takes[{ctx->device.kind, c.name.variant}];
      push_unique(t.dtypes, c.name.dtype);
      if (!c.compute.empty()) push_unique(t.modes, c.compute);
    }
  } catch (const std::exception&) {  // a default the accounting refuses: no dtypes said
  }
  return takes;
}

}  // namespace

json variants_json(const Family& family, const std::vector<DeviceContext>& devices, const PlannedCases& cases) {
  const auto takes = what_variants_take(family, devices);
  json out = json::array();
  for (Device::Kind kind : {Device::Kind::cpu, Device::Kind::cuda}) {
    std::vector<VariantRow> rows;
    for (const Bench& bench : family.benches)
      for (auto& row : bench.variants(kind))
        if (std::none_of(rows.begin(), rows.end(), [&](const VariantRow& r) { return r.name == row.name; }))
          rows.push_back(std::move(row));
    const auto no_device = kind_unavailable(kind, devices);
    for (const VariantRow& row : rows) {
      std::vector<std::string> dtypes, modes;
      if (auto t = takes.find({kind, row.name}); t != takes.end()) {
        dtypes = t->second.dtypes;
        modes = t->second.modes;
      }
      std::size_t planned = 0, skipped = 0;
      std::optional<std::string> skip;
      for (const auto& [ctx, c] : cases) {
        if (ctx->device.kind != kind || c.name.variant != row.name) continue;
        ++planned;
        if (c.skip) {
          ++skipped;
          if (!skip) skip = *c.skip;
        }
      }
      json variant = {{"name", row.name},          {"device", kind_name(kind)}, {"role", kernels::role_name(row.role)},
                      {"fastest", row.speed > 0}, {"shares_memory", row.shares_memory},    {"description", row.description}, {"dtypes", dtypes},
                      {"compute_modes", modes}};
      if (no_device) {
        variant["available"] = false;
        variant["reason"] = *no_device;
      } else if (planned == 0) {
        variant["available"] = nullptr;  // not asked: no case of it in this selection says
        variant["reason"] = "no case of it selected";
      } else if (skipped == planned) {
        variant["available"] = false;
        variant["reason"] = *skip;
      } else {
        variant["available"] = true;
        variant["reason"] = nullptr;
      }
      out.push_back(variant);
    }
  }
  return out;
}

json cases_json(const PlannedCases& cases, const PlannedBlocks& blocks) {
  json out = json::array();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i].second;
    json block;  // null where the stopping rule does not run
    if (i < blocks.size() && blocks[i].has_value()) block = blocks[i].value();
    // What its set-up moves (bench/gpu_check.sh --plan's cost model): operand storage, outputs;
    // sampled: on a CUDA device filled there and validated by samples (no host copies).
    double operand_bytes = 0, output_bytes = 0;
    for (const Operand& op : c.operands) {
      operand_bytes += double(storage_bytes(op));
      if (op.output) output_bytes += double(storage_bytes(op));
    }
    out.push_back({{"name", c.name.str()},
                   {"variant", c.name.variant},
                   {"role", kernels::role_name(c.role)},
                   {"dtype", c.name.dtype},
                   {"device", c.name.device},
                   {"skip", c.skip ? json(*c.skip) : json()},
                   {"ceiling", ceiling_json(set_against(c))},
                   {"measures", ceiling_json(c.measures)},
                   {"group", c.group},
                   {"beside", c.beside.empty() ? json() : json(c.beside)},
                   {"block", block},
                   {"operand_bytes", operand_bytes},
                   {"output_bytes", output_bytes},
                   {"sampled", bool(c.validation.sampled)}});
  }
  return out;
}

json describe_json(const Family& family, const Selection& selection, const std::vector<DeviceContext>& devices,
                   const PlannedCases& cases, const PlannedBlocks& blocks) {
  json doc = {{"describe_schema", kDescribeSchema}, {"binary", family.binary}};
  std::string name = family.binary.starts_with("bench_") ? family.binary.substr(6) : family.binary;
  if (!cases.empty()) name = cases.front().second.name.family;
  doc["family"] = name;
  doc["summary"] = family.summary;
  json accepted = json::array(), defaults = json::array();
  for (DType d : family.dtypes) accepted.push_back(dtype_name(d));
  for (DType d : family.default_dtypes) defaults.push_back(dtype_name(d));
  doc["dtypes"] = {{"accepted", accepted}, {"default", defaults}};
  json axes = json::array();
  for (const Axis& axis : family.axes) {
    json per_device = json::object();
    for (const auto& ctx : devices) {
      json values = json::array();
      for (const AxisValue& value : axis.defaults(ctx, selection.dtypes.front())) values.push_back(value_json(value, axis.kind));
      per_device[ctx.device.str()] = values;
    }
    axes.push_back({{"name", axis.name},
                    {"flag", "--" + axis.flag},
                    {"kind", axis_kind(axis.kind)},
                    {"help", axis.help},
                    {"keys", axis.keys},
                    {"choices", axis.choices},
                    {"defaults", per_device},
                    {"none_if_given", axis.none_if_given}});
  }
  doc["axes"] = axes;
  json suites = json::object();
  for (const SuiteInfo& suite : kSuites) {
    if (!takes_suite(family, suite)) continue;
    std::vector<std::string> args = suite.common;
    if (auto own = family.suites.find(suite.name); own != family.suites.end())
      args.insert(args.end(), own->second.begin(), own->second.end());
    suites[suite.name] = {{"description", suite.description}, {"args", args}};
  }
  doc["suites"] = suites;
  doc["suite"] = selection.suite ? json(*selection.suite) : json();
  doc["variants"] = variants_json(family, devices, cases);
  json device_list = json::array();
  for (const auto& ctx : devices)
    device_list.push_back({{"id", ctx.device.str()},
                           {"available", !ctx.unavailable},
                           {"reason", ctx.unavailable ? json(*ctx.unavailable) : json()}});
#ifndef FLOPSCOPE_HAVE_CUDA
  device_list.push_back({{"id", "cuda"}, {"available", false}, {"reason", *kernels::cuda::unavailable_reason(0)}});
#endif
  doc["devices"] = device_list;
  // Kinds of device whose variants this build left out, so that "variants" lists none of them
  // (the tables are compiled with their kernels: without CUDA there are no CUDA rows to list).
  json not_built = json::array();
#ifndef FLOPSCOPE_HAVE_CUDA
  not_built.push_back({{"device", "cuda"},
                       {"reason", "built without CUDA (FLOPSCOPE_CUDA=OFF or no nvcc): its CUDA variants are not built "
                                  "and not listed"}});
#endif
  doc["variants_not_built"] = not_built;
  doc["cases"] = cases_json(cases, blocks);
  return doc;
}

}  // namespace flopscope::bench
