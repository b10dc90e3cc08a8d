#include "context.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/fill.hpp"
#include "thread_pools.hpp"
#ifdef FLOPSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifndef FLOPSCOPE_BUILD_TYPE
#define FLOPSCOPE_BUILD_TYPE "unknown"
#endif

namespace flopscope::bench {

using nlohmann::json;

namespace {

json peaks_json(const DevicePeaks& peaks) {
  json compute = json::object();
  for (const auto& peak : peaks.compute)
    compute[peak.compute] = {{"flops_per_second", peak.flops_per_second}, {"formula", peak.formula}, {"source", peak.source}};
  return {{"compute", compute},
          {"memory_bytes_per_second", peaks.memory_bytes_per_second > 0 ? json(peaks.memory_bytes_per_second) : json()},
          {"memory_source", peaks.memory_source}};
}

json device_json(const DeviceContext& ctx) {
  json out = {{"kind", ctx.device.is_cpu() ? "cpu" : "cuda"}, {"name", ctx.name}, {"key", ctx.key}};
  out["clock_hz"] = ctx.clock_hz;
  out["clock_source"] = ctx.clock_source;
  out["peaks"] = peaks_json(ctx.peaks);
  if (ctx.device.is_cpu()) {
    out["isa"] = ctx.cpu.vector_isa();
    out["cores"] = ctx.cpu.cores;
    out["fma_units"] = cpu_fma_units(ctx.cpu);
    out["fma_datapath_bits"] = ctx.cpu.fma_datapath_bits();
    out["features"] = {{"avx2", ctx.cpu.avx2}, {"avx512f", ctx.cpu.avx512f}, {"avx512_bf16", ctx.cpu.avx512_bf16},
                       {"avx512_fp16", ctx.cpu.avx512_fp16}, {"amx_bf16", ctx.cpu.amx_bf16}};
    out["caches"] = {{"l1d", ctx.l1d_bytes}, {"l2", ctx.l2_bytes}, {"l3", ctx.l3_bytes}};
  } else {
    out["sm"] = std::to_string(ctx.sm_major) + "." + std::to_string(ctx.sm_minor);
    out["sm_count"] = ctx.sm_count;
    out["caches"] = {{"l2", ctx.l2_bytes}};
    out["memory_bytes"] = ctx.memory_bytes;
  }
  if (ctx.ceilings) {
    out["ceilings"] = {{"file", ctx.ceilings->file},
                       {"memory_bytes_per_second", ctx.ceilings->memory_bytes_per_second},
                       {"compute", ctx.ceilings->compute_flops_per_second}};
  } else {
    out["ceilings"] = nullptr;
  }
  return out;
}

// "481 GFLOP/s", "7.7 TFLOP/s", "4.8 TB/s": `unit` without its prefix ("FLOP/s", "B/s").
std::string rate(double value, const char* unit) {
  char text[48];
  const bool tera = value >= 1e12;
  std::snprintf(text, sizeof text, "%.3g %s%s", value / (tera ? 1e12 : 1e9), tera ? "T" : "G", unit);
  return text;
}

}  // namespace

std::string context_json(const std::string& binary, const Selection& selection, const std::vector<DeviceContext>& devices,
                         json variants, json cases) {
  json context = {{"schema", 2}, {"binary", binary}};
  context["build"] = {{"compiler", std::string(__VERSION__)},
                      {"build_type", FLOPSCOPE_BUILD_TYPE},
                      {"git_commit", git_commit()},
#ifdef FLOPSCOPE_HAVE_CUDA
                      {"cuda", std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10)}
#else
                      {"cuda", nullptr}
#endif
  };
  const std::string thp = kernels::transparent_huge_pages_mode();
  context["run"] = {{"hot", selection.hot},
                    {"huge_pages", selection.huge_pages},
                    {"transparent_huge_pages", thp.empty() ? json(nullptr) : json(thp)},
                    {"blocking_kernel", selection.blocking},
                    {"argv", selection.argv},
                    {"omp_threads", omp_get_max_threads()},
                    {"thread_pools", thread_pool_settings()}};
  json probed = json::object(), skipped = json::object();
  for (const auto& ctx : devices) {
    if (ctx.unavailable)
      skipped[ctx.device.str()] = *ctx.unavailable;
    else
      probed[ctx.device.str()] = device_json(ctx);
  }
#ifndef FLOPSCOPE_HAVE_CUDA
  skipped["cuda"] = *kernels::cuda::unavailable_reason(0);
#endif
  context["devices"] = probed;
  context["skipped_devices"] = skipped;
  context["suite"] = selection.suite ? json(*selection.suite) : json();
  context["variants"] = std::move(variants);
  context["cases"] = std::move(cases);
  return context.dump();
}

std::vector<std::string> device_lines(const std::vector<DeviceContext>& devices) {
  std::vector<std::string> lines;
  for (const auto& ctx : devices) {
    if (ctx.unavailable) {
      lines.push_back(ctx.device.str() + ": skipped: " + *ctx.unavailable);
      continue;
    }
    std::string line = ctx.device.str() + ": " + ctx.name;
    if (ctx.device.is_cpu())
      line += ", " + ctx.cpu.vector_isa() + ", " + std::to_string(ctx.cpu.cores) + " cores";
    else
      line += ", sm_" + std::to_string(ctx.sm_major) + std::to_string(ctx.sm_minor) + ", " +
              std::to_string(ctx.sm_count) + " SMs";
    char clock[32];
    std::snprintf(clock, sizeof clock, ", clock %.2f GHz", ctx.clock_hz / 1e9);
    line += clock;
    std::string peaks;
    for (const auto& peak : ctx.peaks.compute) peaks += (peaks.empty() ? "" : ", ") + peak.compute + " " + rate(peak.flops_per_second, "FLOP/s");
    line += "; peaks " + (peaks.empty() ? std::string("unknown") : peaks);
    line += "; memory " + (ctx.peaks.memory_bytes_per_second > 0 ? rate(ctx.peaks.memory_bytes_per_second, "B/s")
                                                                  : std::string("unknown"));
    line += ctx.ceilings ? "; ceilings from " + ctx.ceilings->file : std::string("; no measured ceilings yet");
    lines.push_back(line);
  }
#ifndef FLOPSCOPE_HAVE_CUDA
  lines.push_back("cuda: skipped: " + *kernels::cuda::unavailable_reason(0));
#endif
  return lines;
}

}  // namespace flopscope::bench
