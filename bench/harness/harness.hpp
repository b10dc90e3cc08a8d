// The one harness of every bench binary: axis flags, case registration and naming, counters,
// JSON context, device timing, validation and skips, progress. A bench file only describes its
// cases (see bench_copy.cpp).
//
// Note [skips vs failures]: Google Benchmark 1.7.1 has SkipWithError but not SkipWithMessage.
// flopscope prefixes the message: "skipped: <reason>" (no GPU, not enough memory, ISA missing)
// or "failed: <reason>" (validation mismatch, CUDA error). analysis/ tells them apart by prefix.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flopscope/device.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/peaks.hpp"
#include "naming.hpp"

namespace flopscope::bench {

// Ceilings measured by bench_peak on this device, read from results/ceilings/<key>.json.
struct Ceilings {
  std::string file;
  std::map<std::string, double> memory_bytes_per_second;  // "copy", "triad"
  std::map<std::string, double> compute_flops_per_second;  // "f32", "bf16", ...
  double memory() const;  // the best memory ceiling, 0 if none
};

struct DeviceContext {
  Device device;
  std::string name;  // "Intel(R) Xeon(R) ..." or "NVIDIA H200"
  std::string key;   // "cpu-intel-r-xeon-r-processor": the ceilings file's name
  std::optional<std::string> unavailable;  // why this device's cases are skipped
  DevicePeaks peaks;
  std::optional<Ceilings> ceilings;
  double clock_hz = 0;
  std::string clock_source;
  // Caches: CPU l1d/l2/l3 bytes, GPU l2 bytes.
  std::size_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  std::size_t memory_bytes = 0;  // total physical / global memory
  CpuInfo cpu;                   // CPU only
  int sm_major = 0, sm_minor = 0, sm_count = 0;  // CUDA only
};

// The axes of a family and how its binary accepts them.
struct FamilySpec {
  std::string binary;                       // "bench_copy"
  std::vector<std::string> variants;        // every variant the binary knows
  std::vector<DType> dtypes;                // every dtype it accepts
  std::vector<DType> default_dtypes;        // what runs without --dtypes
  std::string shape_flag = "sizes";         // --sizes=4Ki,2^28
  std::string shape_help = "element counts";
};

struct Axes {
  std::vector<DType> dtypes;
  std::vector<Device> devices;
  std::vector<std::string> variants;
  std::vector<std::int64_t> sizes;  // empty: the family's defaults
  bool hot = false;                 // --hot: no L2 flush between device iterations
};

enum class Bound { memory, compute };

// What one iteration of a case does, by DESIGN.md's conventions.
struct Work {
  double flops = 0;      // 2 per multiply-add; 0 for a copy
  double bytes = 0;      // fewest bytes that must cross the memory interface
  Bound bound = Bound::memory;
  std::string compute;   // compute mode whose peak applies ("f32", "bf16", ...)
  std::string ceiling;   // bench_peak only: "memory:copy", "compute:f32"
};

class Harness {
 public:
  // Reads and removes flopscope's flags from argv (then Google Benchmark's own): prints a
  // one-line error and exits 2 on a bad value. Probes every requested device.
  Harness(int* argc, char** argv, FamilySpec spec);

  const Axes& axes() const { return axes_; }
  const FamilySpec& spec() const { return spec_; }
  const DeviceContext& device(const Device& device) const;
  bool wants_variant(const std::string& variant) const;

  // Registers one case. CPU cases are timed by Google Benchmark's real-time clock; CUDA cases
  // use manual time (time_cuda). Devices that cannot run get their cases as skips.
  void add(const CaseName& name, std::function<void(benchmark::State&, const DeviceContext&)> body);

  // Runs the registered cases with progress on stderr; returns the exit code.
  int run();

 private:
  FamilySpec spec_;
  Axes axes_;
  std::vector<DeviceContext> devices_;
  std::vector<std::string> argv_;            // as given, for the context
  std::vector<std::string> benchmark_args_;  // argv[0] and Google Benchmark's own flags
  std::vector<std::string> names_;
};

// ---- helpers for case bodies -----------------------------------------------------------------

void skip(benchmark::State& state, const std::string& reason);  // "skipped: ..."
void fail(benchmark::State& state, const std::string& reason);  // "failed: ..."

// Sets flops, bytes, their rates, intensity and the fractions of peak and ceiling.
void set_counters(benchmark::State& state, const DeviceContext& device, const Work& work);

// Bytes this process can still allocate on `device` (CPU: MemAvailable; CUDA: cudaMemGetInfo).
std::size_t available_memory(const DeviceContext& device);
// True (and the case skipped with the reason) if `bytes` do not fit, leaving 10% headroom.
bool skip_if_too_large(benchmark::State& state, const DeviceContext& device, std::size_t bytes);

// Exact comparison: nullopt if equal, else a message with the first mismatching elements.
std::optional<std::string> compare_exact(const void* out, const void* ref, std::size_t count,
                                         std::size_t element_size);

// Fills with random bytes (never all zeros), in parallel, reproducibly from `seed`.
void fill_random_bytes(void* data, std::size_t bytes, std::uint64_t seed);

// 64-byte aligned host buffer, first-touched in parallel (so pages land where threads run).
struct HostBuffer {
  explicit HostBuffer(std::size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  unsigned char* data = nullptr;
  std::size_t bytes = 0;
};

// NVTX range named "flopscope/<name>" for Nsight Systems; a no-op without NVTX.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// The checkout's commit as `git describe --always --dirty` said it at build time ("unknown"
// outside a git checkout); generated by cmake/git_commit.cmake.
const char* git_commit();

// Measured CPU clock (Hz) from a timed chain of dependent adds on every thread, after warm-up.
double measure_cpu_clock_hz(double warmup_seconds);

}  // namespace flopscope::bench
