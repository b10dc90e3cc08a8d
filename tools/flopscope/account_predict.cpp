// flopscope account --predict RUN_DIR: a model's training step predicted from the matmul results
// of a run (lib/include/flopscope/predict.hpp: Note [matmul rate interpolation]).
// Reads every *.json directly inside RUN_DIR as analysis/FORMAT.md describes them: cases named
// matmul/<variant>/<dtype>/<device>/m=<m>,n=<n>,k=<k>/layout=NN|NT|TN, each case's figures from its
// median aggregate (else its one iteration entry, else the repetition of median real_time), its
// `flops_per_second` counter; failed and skipped cases are left out. The peak for MFU is the
// device's theoretical peak for the case's compute mode (label compute=..., else the dtype's) from
// the run's context; without one, MFU is not given.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "naming.hpp"  // bench/harness: the benchmark-name grammar
#include "run_cases.hpp"
#include "account.hpp"
#include "table.hpp"
#include "commands.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/predict.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope::cli {

namespace {

using nlohmann::json;

// What the run's context says about one device.
struct DeviceContext {
  std::string name;
  std::map<std::string, double> peaks;  // compute mode -> FLOP/s
};

struct RunMatmuls {
  std::vector<MatmulMeasurement> measurements;
  std::map<std::string, DeviceContext> devices;
  std::map<std::pair<std::string, std::string>, std::string> compute;  // (device, dtype) -> label compute=
  int files = 0, other_files = 0, cases = 0, left_out = 0;
};

void read_context(const json& context, const std::string& path, RunMatmuls& run) {
  if (!context.contains("flopscope") || !context["flopscope"].is_string())
    throw UsageError{"--predict: " + path + " has no context.flopscope (not a flopscope bench file)"};
  const json flopscope = json::parse(context["flopscope"].get<std::string>(), nullptr, false);
  if (!flopscope.is_object() || !flopscope.contains("devices") || !flopscope["devices"].is_object()) return;
  for (const auto& [device, info] : flopscope["devices"].items()) {
    DeviceContext& known = run.devices[device];  // the first non-null value of each field wins
    if (known.name.empty() && info.contains("name") && info["name"].is_string()) known.name = info["name"];
    if (!info.contains("peaks") || !info["peaks"].is_object() || !info["peaks"].contains("compute")) continue;
    for (const auto& [mode, peak] : info["peaks"]["compute"].items())
      if (peak.is_object() && peak.contains("flops_per_second") && peak["flops_per_second"].is_number() &&
          !known.peaks.contains(mode))
        known.peaks[mode] = peak["flops_per_second"].get<double>();
  }
}

RunMatmuls read_run(const std::string& run_dir) {
  const RunCases cases = read_run_cases("--predict", run_dir);
  RunMatmuls run;
  run.files = static_cast<int>(cases.paths.size());
  run.other_files = cases.other_files;
  for (std::size_t i = 0; i < cases.paths.size(); ++i) read_context(cases.contexts[i], cases.paths[i], run);
  for (const RunCase& c : cases.cases) {
    const bench::CaseName& name = c.name;
    if (name.family != "matmul") continue;
    ++run.cases;
    std::string layout = "NN";
    for (const auto& [key, value] : name.extras)
      if (key == "layout") layout = value;
    const double rate = c.entry ? c.entry->value("flops_per_second", 0.0) : 0.0;
    if (!c.entry || rate <= 0 || (layout != "NN" && layout != "NT" && layout != "TN")) {
      ++run.left_out;
      continue;
    }
    run.measurements.push_back({name.device, name.dtype, name.variant,
                                layout == "NN" ? MatmulLayout::NN : layout == "NT" ? MatmulLayout::NT : MatmulLayout::TN,
                                name.dim("m"), name.dim("n"), name.dim("k"), rate});
    const std::string compute = label_value(c.entry->value("label", ""), "compute");
    if (!compute.empty()) run.compute.emplace(std::pair{name.device, name.dtype}, compute);
  }
  if (run.measurements.empty())
    throw UsageError{"--predict: no matmul results in '" + run_dir + "' (" + std::to_string(run.files) +
                     " benchmark JSON files, " + std::to_string(run.other_files) + " other JSON files, " +
                     std::to_string(run.cases) + " matmul cases that ran; run bench_matmul first)"};
  return run;
}

// The peak that applies to (device, dtype), 0 when the run does not know it.
double peak_for(const RunMatmuls& run, const std::string& device, const std::string& dtype, std::string* mode) {
  auto label = run.compute.find({device, dtype});
  *mode = label != run.compute.end() ? label->second : std::string(dtype);
  if (label == run.compute.end())
    if (auto parsed = parse_compute_mode(dtype)) *mode = std::string(peak_key(*parsed));
  auto info = run.devices.find(device);
  if (info == run.devices.end()) return 0;
  auto peak = info->second.peaks.find(*mode);
  return peak == info->second.peaks.end() ? 0 : peak->second;
}

std::string rate_source(const RateEstimate& rate) {
  if (rate.measured) return "measured (" + rate.variant + ")";
  if (rate.neighbours == 1 && rate.other_layout) return "same shape, other layout";
  return "interpolated (" + std::to_string(rate.neighbours) + " shapes" + (rate.other_layout ? ", other layouts" : "") +
         ")";
}

constexpr const char* kMethod =
    "measured rate at each shape (best variant); where a shape was not measured, the 1/distance² weighted mean of "
    "the 4 nearest measured shapes of its layout in (log2 m, log2 n, log2 k); a bmm is batch x one matrix at its "
    "shape's rate; only matmuls are timed (no elementwise ops, softmax, norms, optimizer): the step is a lower bound";

// The predicted matmuls: a row per matmul of the step and pass, its shape, its rate and where the
// rate came from; printed by kMatmulLayout.
Table matmul_table(const StepPrediction& p) {
  Table table = {.columns = {{"pass", {"pass"}},
                             {"", {"matmul"}},
                             {"layer_kind", {}},
                             {"name", {}},
                             {"role", {"role"}},
                             {"layout", {"layout"}},
                             {"batch", {"batch"}},
                             {"m", {"m"}},
                             {"n", {"n"}},
                             {"k", {"k"}},
                             {"count", {"x"}},
                             {"flops_per_second", {"GFLOP/s"}, printf_format("%.1f", 1, 1e9)},
                             {"measured", {}},
                             {"source", {"rate"}},
                             {"seconds", {"ms"}, printf_format("%.4f", 1e3)}}};
  for (const auto& row : p.matmuls) {
    table.rows.push_back({std::string(pass_name(row.pass)), row.layer_kind + "." + row.shape.name, row.layer_kind,
                          row.shape.name, std::string(matmul_role_name(row.shape.role)),
                          std::string(matmul_layout_name(row.shape.layout)), row.shape.batch, row.shape.m,
                          row.shape.n, row.shape.k, row.count, row.rate.flops_per_second,
                          Cell::json(row.rate.measured), rate_source(row.rate), row.seconds});
  }
  return table;
}

constexpr std::string_view kMatmulLayout = "  %-8s %-18s %-15s %-6s %6s %7s %7s %7s %5s %12s  %-32s %10s\n";

json prediction_json(const StepPrediction& p, const Network& network, double peak, const std::string& mode,
                     const std::string& device_name) {
  json rows = table_json(matmul_table(p));
  json out = {{"device", p.device}, {"device_name", device_name}, {"dtype", p.dtype}, {"compute", mode},
              {"forward_seconds", p.forward_seconds}, {"backward_seconds", p.backward_seconds},
              {"step_seconds", p.step_seconds()}, {"matmul_flops", json_count(p.matmul_flops)},
              {"measured_shapes", p.measured_shapes}, {"interpolated_shapes", p.interpolated_shapes},
              {"matmuls", rows}};
  if (peak > 0) {
    out["peak_flops_per_second"] = peak;
    out["mfu"] = static_cast<double>(network.step().pytorch_flops) / p.step_seconds() / peak;
  }
  return out;
}

void print_prediction(const StepPrediction& p, const Network& network, double peak, const std::string& mode,
                      const std::string& device_name) {
  std::printf("%s (%s), %s:\n", p.device.c_str(), device_name.empty() ? "name unknown" : device_name.c_str(),
              p.dtype.c_str());
  print_fixed(matmul_table(p), kMatmulLayout);
  std::printf("  forward %.3f ms, backward %.3f ms (backward / forward %.2f; FLOPs ratio %.2f), step %.3f ms\n",
              p.forward_seconds * 1e3, p.backward_seconds * 1e3, p.backward_seconds / p.forward_seconds,
              static_cast<double>(network.totals.backward.pytorch_flops) /
                  static_cast<double>(network.totals.forward.pytorch_flops),
              p.step_seconds() * 1e3);
  if (peak > 0)
    std::printf("  MFU %.1f%% (step FLOPs, pytorch convention, %s / predicted step / %s peak %.1f GFLOP/s)\n",
                100 * static_cast<double>(network.step().pytorch_flops) / p.step_seconds() / peak,
                exact_and_short(network.step().pytorch_flops).c_str(), mode.c_str(), peak / 1e9);
  else
    std::printf("  MFU: unknown (the run's context has no %s peak for %s)\n", mode.c_str(), p.device.c_str());
  std::printf("  shapes: %d measured, %d interpolated\n", p.measured_shapes, p.interpolated_shapes);
}

}  // namespace

int account_predict(const std::string& run_dir, const Network& network, bool as_json) {
  const RunMatmuls run = read_run(run_dir);
  const MatmulRates rates(run.measurements);
  json out = network.head;
  out["run"] = run_dir;
  out["method"] = kMethod;
  out["predictions"] = json::array();
  if (!as_json)
    std::printf("step of %s predicted from the matmuls of %s (%zu measured shapes)\nmethod: %s\n\n",
                network.description.c_str(), run_dir.c_str(), rates.best().size(), kMethod);
  for (const auto& [device, dtype] : rates.device_dtypes()) {
    const StepPrediction prediction = predict_step(network.layers, rates, device, dtype);
    std::string mode;
    const double peak = peak_for(run, device, dtype, &mode);
    auto info = run.devices.find(device);
    const std::string device_name = info == run.devices.end() ? "" : info->second.name;
    if (as_json) out["predictions"].push_back(prediction_json(prediction, network, peak, mode, device_name));
    else print_prediction(prediction, network, peak, mode, device_name), std::printf("\n");
  }
  if (as_json) std::printf("%s\n", dump_exact(out).c_str());
  return 0;
}

}  // namespace flopscope::cli
