#include "devices.hpp"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "flopscope/kernels/cuda_runtime.hpp"
#ifdef FLOPSCOPE_HAVE_CUDA
#include "cuda.hpp"
#endif

namespace flopscope::bench {

using nlohmann::json;

namespace {

std::string slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace

double Ceilings::memory() const {
  double best = 0;
  for (const auto& [kind, value] : memory_bytes_per_second) best = std::max(best, value);
  return best;
}

std::size_t DeviceContext::last_level_cache() const {
  return std::max({l3_bytes, l2_bytes, std::size_t{1} << 20});
}

std::optional<std::size_t> available_memory(const DeviceContext& device) {
#ifdef FLOPSCOPE_HAVE_CUDA
  if (device.device.is_cuda()) return cuda::free_memory(device.device.index);
#endif
  if (device.device.is_cuda()) return std::nullopt;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return std::nullopt;
}

// ---- clocks ----------------------------------------------------------------------------------

// Note [clock from dependent adds]: each add depends on the previous one, so the chain runs at
// one add per cycle whatever the core's width: adds / seconds is the clock. 100 adds per loop
// trip; the loop's own counter runs on another port in parallel. Register-register adds: Golden
// Cove and later fold chains of add-immediate at rename, which would read as 5x the clock.
static double time_add_chain(std::uint64_t trips) {
  auto start = std::chrono::steady_clock::now();
  std::uint64_t value = 0, one = 1;
  for (std::uint64_t t = 0; t < trips; ++t) {
    asm volatile(
        ".rept 100\n\t"
        "addq %1, %0\n\t"
        ".endr"
        : "+r"(value)
        : "r"(one));
  }
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return double(trips) * 100 / elapsed.count();
}

double measure_cpu_clock_hz(double warmup_seconds) {
  // Short chains (2.5 ms at 4 GHz), the best of 20 per thread, the best thread: a chain that
  // another process preempted reads slow, one that ran undisturbed reads the clock.
  std::vector<double> clocks(static_cast<std::size_t>(omp_get_max_threads()), 0.0);
#pragma omp parallel
  {
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < warmup_seconds)
      time_add_chain(100'000);
    double best = 0;
    for (int i = 0; i < 20; ++i) best = std::max(best, time_add_chain(100'000));
    clocks[static_cast<std::size_t>(omp_get_thread_num())] = best;
  }
  return *std::max_element(clocks.begin(), clocks.end());
}

// ---- ceilings file ---------------------------------------------------------------------------

std::optional<Ceilings> read_ceilings(const std::string& key) {
  const char* dir = std::getenv("FLOPSCOPE_CEILINGS_DIR");
  std::string path = std::string(dir ? dir : "results/ceilings") + "/" + key + ".json";
  std::ifstream file(path);
  if (!file) return std::nullopt;
  try {
    json data = json::parse(file);
    Ceilings ceilings;
    ceilings.file = path;
    for (auto& [kind, value] : data.at("memory_bytes_per_second").items())
      if (value.is_number()) ceilings.memory_bytes_per_second[kind] = value.get<double>();
    for (auto& [mode, value] : data.at("compute").items())
      if (value.is_number()) ceilings.compute_flops_per_second[mode] = value.get<double>();
    return ceilings;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "flopscope: ignoring unreadable ceilings file %s (%s)\n", path.c_str(), error.what());
    return std::nullopt;
  }
}

// ---- devices ---------------------------------------------------------------------------------

DeviceContext probe_cpu(double warmup_seconds) {
  DeviceContext ctx;
  ctx.device = Device::cpu();
  ctx.cpu = this_cpu();
  ctx.name = ctx.cpu.model_name;
  ctx.key = "cpu-" + slug(ctx.name);
  ctx.clock_hz = measure_cpu_clock_hz(warmup_seconds);
  ctx.clock_source = "measured: best of short chains of dependent adds on every thread, after " +
                     std::to_string(int(warmup_seconds * 1000)) + " ms of warm-up";
  ctx.peaks = cpu_peaks(ctx.cpu, ctx.clock_hz, cpu_fma_units(ctx.cpu));
  ctx.l1d_bytes = ctx.cpu.l1d_bytes;
  ctx.l2_bytes = ctx.cpu.l2_bytes;
  ctx.l3_bytes = ctx.cpu.l3_bytes;
  ctx.ceilings = read_ceilings(ctx.key);
  return ctx;
}

DeviceContext probe_cuda(const Device& device, bool measure_clock) {
  DeviceContext ctx;
  ctx.device = device;
  ctx.unavailable = kernels::cuda::unavailable_reason(device.index);
  if (ctx.unavailable) return ctx;
  auto props = kernels::cuda::device_properties(device.index);
  ctx.name = props.name;
  ctx.key = "cuda-" + slug(props.name);
  ctx.sm_major = props.sm_major;
  ctx.sm_minor = props.sm_minor;
  ctx.sm_count = props.sm_count;
  ctx.l2_bytes = props.l2_bytes;
  ctx.memory_bytes = props.global_memory_bytes;
#ifdef FLOPSCOPE_HAVE_CUDA
  if (measure_clock) {  // --describe measures nothing: 0.2 s of spinning saved
    ctx.clock_hz = cuda::measure_clock_hz(device.index);
    ctx.clock_source = "measured: clock64() spin against CUDA events (runtime reports " +
                       std::to_string(props.clock_ghz) + " GHz max)";
  }
#else
  (void)measure_clock;
#endif
  if (const GpuSpec* spec = find_gpu_spec(props.name)) {
    ctx.peaks = gpu_peaks(*spec);
  } else {
    ctx.peaks.device_name = props.name;
    ctx.peaks.memory_source = "not in flopscope's GPU table (lib/src/peaks.cpp)";
  }
  ctx.ceilings = read_ceilings(ctx.key);
  return ctx;
}

}  // namespace flopscope::bench
