#include "harness.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include <unistd.h>
#include <sstream>

#include "flopscope/kernels/cuda_runtime.hpp"
#include "flopscope/kernels/hash.hpp"
#include "flopscope/sizes.hpp"

#ifdef FLOPSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "cuda.hpp"
#endif

#ifndef FLOPSCOPE_BUILD_TYPE
#define FLOPSCOPE_BUILD_TYPE "unknown"
#endif

namespace flopscope::bench {

using nlohmann::json;

// ---- small helpers ---------------------------------------------------------------------------

[[noreturn]] static void usage_error(const std::string& binary, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", binary.c_str(), message.c_str());
  std::exit(2);
}

static std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

static std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

static std::string slug(const std::string& text) {
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

double Ceilings::memory() const {
  double best = 0;
  for (const auto& [kind, value] : memory_bytes_per_second) best = std::max(best, value);
  return best;
}

void skip(benchmark::State& state, const std::string& reason) { state.SkipWithError(("skipped: " + reason).c_str()); }
void fail(benchmark::State& state, const std::string& reason) { state.SkipWithError(("failed: " + reason).c_str()); }

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

// ---- memory ----------------------------------------------------------------------------------

HostBuffer::HostBuffer(std::size_t size) : bytes(size) {
  std::size_t rounded = (std::max<std::size_t>(size, 1) + 63) / 64 * 64;
  data = static_cast<unsigned char*>(std::aligned_alloc(64, rounded));
  if (!data) throw std::bad_alloc();
  // First touch, one page in 4096 per thread chunk, so that the timed loop does not page-fault.
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < rounded; i += 4096) data[i] = 0;
}

HostBuffer::~HostBuffer() { std::free(data); }

void fill_random_bytes(void* data, std::size_t bytes, std::uint64_t seed) {
  auto* out = static_cast<unsigned char*>(data);
  const std::size_t words = bytes / 8;
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint64_t z = kernels::hash_index(seed, i);
    std::memcpy(out + i * 8, &z, 8);
  }
  for (std::size_t i = words * 8; i < bytes; ++i) out[i] = static_cast<unsigned char>(0x5A + i);
}

std::optional<std::string> compare_exact(const void* out, const void* ref, std::size_t count,
                                         std::size_t element_size) {
  if (count == 0 || std::memcmp(out, ref, count * element_size) == 0) return std::nullopt;
  const auto* a = static_cast<const unsigned char*>(out);
  const auto* b = static_cast<const unsigned char*>(ref);
  std::string message;
  std::size_t shown = 0, mismatches = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * element_size, b + i * element_size, element_size) == 0) continue;
    ++mismatches;
    if (shown++ < 3) message += (message.empty() ? "" : ", ") + std::string("element ") + std::to_string(i);
  }
  return std::to_string(mismatches) + " of " + std::to_string(count) + " elements differ (" + message + ")";
}

std::size_t available_memory(const DeviceContext& device) {
#ifdef FLOPSCOPE_HAVE_CUDA
  if (device.device.is_cuda()) return cuda::free_memory(device.device.index);
#endif
  if (device.device.is_cuda()) return 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return std::size_t{1} << 40;  // unknown: let the allocation decide
}

bool skip_if_too_large(benchmark::State& state, const DeviceContext& device, std::size_t bytes) {
  std::size_t available = available_memory(device);
  if (double(bytes) <= 0.9 * double(available)) return false;
  skip(state, "needs " + format_bytes_binary(double(bytes)) + ", " + device.device.str() + " has " +
                  format_bytes_binary(double(available)) + " available");
  return true;
}

// ---- counters --------------------------------------------------------------------------------

void set_counters(benchmark::State& state, const DeviceContext& device, const Work& work) {
  using benchmark::Counter;
  state.counters["flops"] = Counter(work.flops);
  state.counters["bytes"] = Counter(work.bytes);
  state.counters["flops_per_second"] = Counter(work.flops, Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_second"] = Counter(work.bytes, Counter::kIsIterationInvariantRate);
  state.counters["intensity"] = Counter(work.bytes > 0 ? work.flops / work.bytes : 0);
  // Note [percent counters]: a rate counter of (work / peak x 100) is the achieved percentage,
  // computed by Google Benchmark from the same elapsed time as every other rate.
  auto percent = [&](const char* name, double amount, double peak) {
    if (peak > 0 && amount > 0) state.counters[name] = Counter(100.0 * amount / peak, Counter::kIsIterationInvariantRate);
  };
  const ComputePeak* peak = device.peaks.find(work.compute);
  percent("pct_peak_flops", work.flops, peak ? peak->flops_per_second : 0);
  percent("pct_peak_bw", work.bytes, device.peaks.memory_bytes_per_second);
  // bench_peak's own cases measure the ceilings: a fraction of the previous run's would say
  // nothing about this one.
  if (device.ceilings && work.ceiling.empty()) {
    auto it = device.ceilings->compute_flops_per_second.find(work.compute);
    percent("pct_ceiling_flops", work.flops, it == device.ceilings->compute_flops_per_second.end() ? 0 : it->second);
    percent("pct_ceiling_bw", work.bytes, device.ceilings->memory());
  }
  std::string label = std::string("bound=") + (work.bound == Bound::memory ? "memory" : "compute");
  if (!work.compute.empty()) label += " compute=" + work.compute;
  if (!work.ceiling.empty()) label += " ceiling=" + work.ceiling;
  state.SetLabel(label);
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

static std::optional<Ceilings> read_ceilings(const std::string& key) {
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

static DeviceContext probe_cpu(double warmup_seconds) {
  DeviceContext ctx;
  ctx.device = Device::cpu();
  ctx.cpu = detect_cpu();
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

static DeviceContext probe_cuda(const Device& device) {
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
  ctx.clock_hz = cuda::measure_clock_hz(device.index);
  ctx.clock_source = "measured: clock64() spin against CUDA events (runtime reports " +
                     std::to_string(props.clock_ghz) + " GHz max)";
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

// ---- flags -----------------------------------------------------------------------------------

Harness::Harness(int* argc, char** argv, FamilySpec spec) : spec_(std::move(spec)) {
  for (int i = 0; i < *argc; ++i) argv_.emplace_back(argv[i]);
  benchmark_args_.push_back(argv_.front());
  axes_.dtypes = spec_.default_dtypes;
  axes_.variants = spec_.variants;
  axes_.devices = {Device::cpu()};
  // Every CUDA device present; where there is none but CUDA was built, cuda:0 anyway, so that its
  // cases show up as skips with the runtime's reason rather than vanish.
  for (int i = 0; i < kernels::cuda::device_count(); ++i) axes_.devices.push_back(Device::cuda(i));
#ifdef FLOPSCOPE_HAVE_CUDA
  if (axes_.devices.size() == 1) axes_.devices.push_back(Device::cuda(0));
#endif
  std::string dtype_names;
  for (DType d : spec_.dtypes) dtype_names += (dtype_names.empty() ? "" : ", ") + std::string(dtype_name(d));

  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string arg = argv[i];
    auto value_of = [&](const std::string& flag) -> std::optional<std::string> {
      if (arg.rfind("--" + flag + "=", 0) == 0) return arg.substr(flag.size() + 3);
      return std::nullopt;
    };
    if (auto v = value_of("dtypes")) {
      axes_.dtypes.clear();
      for (const auto& name : split_list(*v)) {
        if (name == "all") {
          axes_.dtypes = spec_.dtypes;
          continue;
        }
        auto dtype = parse_dtype(name);
        if (!dtype || std::find(spec_.dtypes.begin(), spec_.dtypes.end(), *dtype) == spec_.dtypes.end())
          usage_error(spec_.binary, "unknown dtype '" + name + "' (accepted: " + dtype_names + ", all)");
        axes_.dtypes.push_back(*dtype);
      }
      if (axes_.dtypes.empty()) usage_error(spec_.binary, "--dtypes is empty (accepted: " + dtype_names + ")");
    } else if (auto devices = value_of("devices")) {
      axes_.devices.clear();
      for (const auto& name : split_list(*devices)) {
        auto device = parse_device(name);
        if (!device) usage_error(spec_.binary, "unknown device '" + name + "' (accepted: cpu, cuda, cuda:N)");
        axes_.devices.push_back(*device);
      }
      if (axes_.devices.empty()) usage_error(spec_.binary, "--devices is empty (accepted: cpu, cuda:N)");
    } else if (auto variants = value_of("variants")) {
      axes_.variants.clear();
      for (const auto& name : split_list(*variants)) {
        if (std::find(spec_.variants.begin(), spec_.variants.end(), name) == spec_.variants.end())
          usage_error(spec_.binary, "unknown variant '" + name + "' (accepted: " + join(spec_.variants) + ")");
        axes_.variants.push_back(name);
      }
      if (axes_.variants.empty()) usage_error(spec_.binary, "--variants is empty");
    } else if (auto sizes = value_of(spec_.shape_flag)) {
      for (const auto& text : split_list(*sizes)) {
        auto count = parse_count(text);
        if (!count)
          usage_error(spec_.binary, "malformed size '" + text + "' in --" + spec_.shape_flag + " (" + spec_.shape_help +
                                        ", e.g. 4096, 2^28, 256Mi, 1e6)");
        axes_.sizes.push_back(*count);
      }
      if (axes_.sizes.empty()) usage_error(spec_.binary, "--" + spec_.shape_flag + " is empty");
    } else if (arg == "--hot") {
      axes_.hot = true;
    } else if (arg.rfind("--benchmark_", 0) == 0 || arg.rfind("--v=", 0) == 0) {
      benchmark_args_.push_back(arg);  // Google Benchmark's own
      argv[out++] = argv[i];
    } else if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: %s [--dtypes=%s|all] [--devices=cpu,cuda:0] [--variants=%s]\n"
          "       [--%s=N,...] (%s: 4096, 2^28, 256Mi) [--hot] [--benchmark_* flags]\n",
          spec_.binary.c_str(), dtype_names.c_str(), join(spec_.variants).c_str(), spec_.shape_flag.c_str(),
          spec_.shape_help.c_str());
      std::exit(0);
    } else {
      usage_error(spec_.binary, "unknown flag '" + arg + "' (flopscope flags: --dtypes= --devices= --variants= --" +
                                    spec_.shape_flag + "= --hot; and --benchmark_*)");
    }
  }
  *argc = out;
  argv[out] = nullptr;

  const char* warmup = std::getenv("FLOPSCOPE_WARMUP_S");
  double warmup_seconds = warmup ? std::atof(warmup) : 1.0;
  for (const Device& device : axes_.devices)
    devices_.push_back(device.is_cpu() ? probe_cpu(warmup_seconds) : probe_cuda(device));
  // Said once on the console: which devices were skipped and why.
  for (const auto& ctx : devices_)
    if (ctx.unavailable)
      std::fprintf(stderr, "%s: %s cases skipped: %s\n", spec_.binary.c_str(), ctx.device.str().c_str(),
                   ctx.unavailable->c_str());
#ifndef FLOPSCOPE_HAVE_CUDA
  std::fprintf(stderr, "%s: CUDA cases skipped: %s\n", spec_.binary.c_str(),
               kernels::cuda::unavailable_reason(0)->c_str());
#endif
}

const DeviceContext& Harness::device(const Device& device) const {
  for (const auto& ctx : devices_)
    if (ctx.device == device) return ctx;
  throw std::invalid_argument("device " + device.str() + " was not requested");
}

bool Harness::wants_variant(const std::string& variant) const {
  return std::find(axes_.variants.begin(), axes_.variants.end(), variant) != axes_.variants.end();
}

void Harness::add(const CaseName& name, std::function<void(benchmark::State&, const DeviceContext&)> body) {
  const std::string text = name.str();
  const DeviceContext& ctx = device(*parse_device(name.device));
  auto* bench = benchmark::RegisterBenchmark(text.c_str(), [body, &ctx, text](benchmark::State& state) {
    if (ctx.unavailable) {
      skip(state, *ctx.unavailable);
      for (auto _ : state) {
      }
      return;
    }
    NvtxRange range(text);
    body(state, ctx);
  });
  if (ctx.device.is_cuda())
    bench->UseManualTime();
  else
    bench->UseRealTime();  // the work runs on every OpenMP thread, not just this one
  bench->Unit(benchmark::kMicrosecond);
  names_.push_back(text);
}

// ---- running ---------------------------------------------------------------------------------

namespace {

// Prints "[bench_copy] 12/48  35.2 s  <case>" on stderr as each case finishes, and passes every
// call on to the display reporter that --benchmark_format asks for (console, json or csv).
class ProgressReporter : public benchmark::BenchmarkReporter {
 public:
  ProgressReporter(std::string binary, std::size_t total, const std::string& format)
      : binary_(std::move(binary)), total_(total) {
    if (format == "json")
      inner_ = std::make_unique<benchmark::JSONReporter>();
    else if (format == "csv") {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // deprecated, still a documented format
      inner_ = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
    }
    else
      inner_ = std::make_unique<benchmark::ConsoleReporter>(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
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
  std::string last_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// How many of `names` Google Benchmark's filter selects (same rules: "-" negates, "all" = all).
std::size_t count_selected(const std::vector<std::string>& names, std::string filter) {
  if (filter.empty() || filter == "all" || filter == ".") return names.size();
  bool negate = filter[0] == '-';
  if (negate) filter.erase(0, 1);
  try {
    std::regex re(filter);
    return std::size_t(std::count_if(names.begin(), names.end(), [&](const std::string& n) {
      return std::regex_search(n, re) != negate;
    }));
  } catch (const std::regex_error&) {
    return names.size();
  }
}

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

}  // namespace

int Harness::run() {
  std::vector<std::string> kept = benchmark_args_;
  // Warm-up before each case unless the user chose: set as a flag, since a per-benchmark
  // MinWarmUpTime() would add "/min_warmup_time:..." to every name.
  if (std::none_of(kept.begin(), kept.end(), [](const std::string& a) { return a.rfind("--benchmark_min_warmup_time", 0) == 0; }))
    kept.push_back("--benchmark_min_warmup_time=0.05");
  std::vector<char*> args;
  for (auto& arg : kept) args.push_back(arg.data());
  int argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&argc, args.data());

  json context = {{"schema", 1}, {"binary", spec_.binary}};
  context["build"] = {{"compiler", std::string(__VERSION__)},
                      {"build_type", FLOPSCOPE_BUILD_TYPE},
                      {"git_commit", git_commit()},
#ifdef FLOPSCOPE_HAVE_CUDA
                      {"cuda", std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10)}
#else
                      {"cuda", nullptr}
#endif
  };
  context["run"] = {{"hot", axes_.hot}, {"argv", argv_}, {"omp_threads", omp_get_max_threads()}};
  json devices = json::object(), skipped = json::object();
  for (const auto& ctx : devices_) {
    if (ctx.unavailable)
      skipped[ctx.device.str()] = *ctx.unavailable;
    else
      devices[ctx.device.str()] = device_json(ctx);
  }
#ifndef FLOPSCOPE_HAVE_CUDA
  skipped["cuda"] = *kernels::cuda::unavailable_reason(0);
#endif
  context["devices"] = devices;
  context["skipped_devices"] = skipped;
  benchmark::AddCustomContext("flopscope", context.dump());

  std::string format = "console";
  for (const auto& arg : kept)
    if (arg.rfind("--benchmark_format=", 0) == 0) format = arg.substr(19);
  ProgressReporter display(spec_.binary, count_selected(names_, benchmark::GetBenchmarkFilter()), format);
  benchmark::RunSpecifiedBenchmarks(&display);
  benchmark::Shutdown();
  return 0;
}

}  // namespace flopscope::bench
