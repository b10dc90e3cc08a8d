#include "report.hpp"

#ifdef FLOPSCOPE_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace flopscope::bench {

void skip(benchmark::State& state, const std::string& reason) { state.SkipWithError(("skipped: " + reason).c_str()); }
void fail(benchmark::State& state, const std::string& reason) { state.SkipWithError(("failed: " + reason).c_str()); }

void set_counters(benchmark::State& state, const DeviceContext& device, const Case& c, const Counters& extra) {
  using benchmark::Counter;
  const double flops = double(c.cost.flops), bytes = double(c.cost.bytes);
  state.counters["flops"] = Counter(flops);
  state.counters["bytes"] = Counter(bytes);
  state.counters["flops_per_second"] = Counter(flops, Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_second"] = Counter(bytes, Counter::kIsIterationInvariantRate);
  state.counters["intensity"] = Counter(bytes > 0 ? flops / bytes : 0);
  // Note [percent counters]: a rate counter of (work / peak x 100) is the achieved percentage,
  // computed by Google Benchmark from the same elapsed time as every other rate.
  auto percent = [&](const char* name, double amount, double peak) {
    if (peak > 0 && amount > 0) state.counters[name] = Counter(100.0 * amount / peak, Counter::kIsIterationInvariantRate);
  };
  const ComputePeak* peak = device.peaks.find(c.compute);
  percent("pct_peak_flops", flops, peak ? peak->flops_per_second : 0);
  percent("pct_peak_bw", bytes, device.peaks.memory_bytes_per_second);
  // bench_peak's own cases measure the ceilings: a fraction of the previous run's would say
  // nothing about this one.
  if (device.ceilings && !c.measures) {
    const auto& compute = device.ceilings->compute_flops_per_second;
    auto it = compute.find(c.compute);
    percent("pct_ceiling_flops", flops, it == compute.end() ? 0 : it->second);
    percent("pct_ceiling_bw", bytes, device.ceilings->memory());
  }
  for (const auto& [name, value] : extra) state.counters[name] = Counter(value);
  std::string label = std::string("bound=") + (c.bound == Bound::memory ? "memory" : "compute");
  if (!c.compute.empty()) label += " compute=" + c.compute;
  if (c.measures) label += " ceiling=" + c.measures->str();
  if (c.label)
    if (const std::string words = c.label(); !words.empty()) label += " " + words;
  state.SetLabel(label);
}

NvtxRange::NvtxRange(const std::string& name) {
#ifdef FLOPSCOPE_HAVE_CUDA
  nvtxRangePushA(("flopscope/" + name).c_str());
#else
  (void)name;
#endif
}

NvtxRange::~NvtxRange() {
#ifdef FLOPSCOPE_HAVE_CUDA
  nvtxRangePop();
#endif
}

}  // namespace flopscope::bench
