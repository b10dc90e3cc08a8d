// flopscope peaks: the theoretical peak table (GPUs) and this CPU's computed peaks.
#include <cstdio>

#include "commands.hpp"
#include "flopscope/peaks.hpp"

namespace flopscope::cli {

namespace {

void print_peaks(const DevicePeaks& peaks) {
  std::printf("%s\n", peaks.device_name.c_str());
  for (const auto& peak : peaks.compute)
    std::printf("  %-11s %10.1f TFLOP/s  = %s\n", peak.compute.c_str(), peak.flops_per_second / 1e12,
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
  print_peaks(cpu_peaks(cpu, 1e9, cpu_fma_units(cpu)));
  return 0;
}

}  // namespace flopscope::cli
