// flopscope peaks: the theoretical peak table (GPUs) and this CPU's computed peaks.
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/peaks.hpp"

namespace flopscope::cli {

namespace {

// "989.4 TFLOP/s", "64.0 GFLOP/s" below 1 TFLOP/s (a CPU per GHz), "not rated" for none.
std::string rate(double flops_per_second) {
  char text[32];
  if (!(flops_per_second > 0)) return "not rated";
  if (flops_per_second < 1e12) std::snprintf(text, sizeof text, "%.1f GFLOP/s", flops_per_second / 1e9);
  else std::snprintf(text, sizeof text, "%.1f TFLOP/s", flops_per_second / 1e12);
  return text;
}

void print_peaks(const DevicePeaks& peaks) {
  std::printf("%s\n", peaks.device_name.c_str());
  for (const auto& peak : peaks.compute)
    std::printf("  %-11s %16s  = %s\n", peak.compute.c_str(), rate(peak.flops_per_second).c_str(),
                peak.formula.c_str());
  if (peaks.memory_bytes_per_second > 0)
    std::printf("  %-11s %10.1f GB/s     (%s)\n", "memory", peaks.memory_bytes_per_second / 1e9,
                peaks.memory_source.c_str());
  else
    std::printf("  %-11s %s\n", "memory", peaks.memory_source.c_str());
}

}  // namespace

int cmd_peaks(const Args& args) {
  if (!args.empty()) throw UsageError{"takes no arguments (got '" + args[0] + "')"};
  for (const auto& spec : gpu_spec_table()) {
    print_peaks(gpu_peaks(spec));
    std::printf("  source: %.*s\n\n", int(spec.source.size()), spec.source.data());
  }
  CpuInfo cpu = detect_cpu();
  // Without a measured clock (that is bench_peak's job) the nominal clock is unknown: show the
  // formula per GHz so that the reader can scale it.
  std::printf("This CPU, per 1 GHz of clock (bench_peak measures the real clock):\n");
  const DevicePeaks peaks = cpu_peaks(cpu, 1e9, cpu_fma_units(cpu));
  print_peaks(peaks);
  // The storage dtypes' compute modes the CPU has no instruction for (f16/bf16 without AVX512-FP16
  // or AVX512_BF16, fp8): said, not printed as 0.
  std::string unrated;
  for (DType dtype : kAllDTypes) {
    const std::string key(peak_key(natural_compute_mode(dtype)));
    if (!peaks.find(key) && unrated.find(key) == std::string::npos) unrated += (unrated.empty() ? "" : ", ") + key;
  }
  if (!unrated.empty()) std::printf("  not rated: %s (no instruction for them on this CPU)\n", unrated.c_str());
  return 0;
}

}  // namespace flopscope::cli
