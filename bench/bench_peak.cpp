// peak/<variant>/<dtype>/<device>/<shape>: the measured ceilings of each device.
//   Compute: independent FMA chains at the widest vectors (CPU: AVX-512, else AVX2; bf16 dot
//   products and fp16 FMA where the CPU has them), GPU: FMA chains on every CUDA core, and the
//   tensor cores through cuBLASLt GEMMs (tf32, f16, bf16, fp8 pairs).
//   Memory: copy and STREAM triad on arrays past 4x the last-level cache.
// Each case's label says which ceiling it measures (ceiling=compute:f32, ceiling=memory:triad).
// With --write-ceilings=DIR this binary writes DIR/<device key>.json from its own results (the
// best median per label), which every later bench binary reads (FORMAT.md).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "copy_cases.hpp"
#include "flopscope/kernels/hash.hpp"
#include "flopscope/kernels/peak.hpp"
#include "flopscope/tensor.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

constexpr std::uint64_t kCpuTrips = 200'000;  // ~0.5 ms per call at 4 GHz
constexpr std::uint64_t kCudaTrips = 1 << 14;
constexpr int kCudaBlocksPerSm = 16;

// ---- FMA chains ----

std::span<const kernels::FmaChainVariant> chain_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_fma_chain_variants() : kernels::cuda_fma_chain_variants();
}

std::vector<std::string> chain_names(Device::Kind kind) {
  std::vector<std::string> names;
  for (const auto& v : chain_variants(kind))
    if (std::find(names.begin(), names.end(), v.name) == names.end()) names.emplace_back(v.name);
  return names;
}

// Chain inputs: the recurrence acc = acc * a + b is checked lane for lane against the scalar
// reference. For bf16 and f16, a = -1, b = 1 keep every step exact in the narrow type.
kernels::FmaChainProblem chain_problem(const TensorRef& out, ComputeMode mode, std::uint64_t trips) {
  const bool narrow = mode == ComputeMode::bf16 || mode == ComputeMode::f16;
  return {out, mode, trips, narrow ? 0.0 : 0.5, narrow ? -1.0 : 0.999999, narrow ? 1.0 : 1e-3};
}

std::optional<Case> build_chains(const Point& p) {
  const DeviceContext& device = *p.device;
  const ComputeMode mode = natural_compute_mode(p.dtype);
  const kernels::FmaChainVariant* variant = nullptr;
  for (const auto& v : chain_variants(device.device.kind))
    if (v.name == p.variant && v.info.mode == mode) variant = &v;
  if (!variant) return std::nullopt;
  const bool cpu = device.device.is_cpu();
  const std::uint64_t trips = cpu ? kCpuTrips : kCudaTrips;
  const std::int64_t threads = cpu ? omp_get_max_threads()
                                   : std::int64_t{std::max(device.sm_count, 1)} * kCudaBlocksPerSm *
                                         kernels::kCudaPeakThreadsPerBlock;
  const std::string key(peak_key(mode));
  Case c;
  c.name = {"peak", p.variant, std::string(dtype_name(p.dtype)), device.device.str(), {{"trips", std::int64_t(trips)}}, {}};
  c.bound = Bound::compute;
  c.compute = key;
  c.ceiling = "compute:" + key;
  c.operands = {Operand::output_of("out", DType::f64, {threads})};
  const auto problem = [mode, trips](std::span<const TensorRef> ops) { return chain_problem(ops[0], mode, trips); };
  // Every thread's value, bit for bit: the scalar recurrence.
  c.validation.check = [problem, name = std::string(p.variant)](std::span<const TensorRef> host, Counters&) -> std::optional<std::string> {
    const kernels::FmaChainProblem chains = problem(host);
    const double expected = kernels::fma_chain_reference(chains.mode, chains.trips, chains.start, chains.a, chains.b);
    const double* out = chains.out.ptr<double>();
    for (std::int64_t t = 0; t < chains.out.numel(); ++t)
      if (std::memcmp(&out[t], &expected, sizeof expected) != 0)
        return "thread " + std::to_string(t) + " ends at " + std::to_string(out[t]) + ", the reference at " +
               std::to_string(expected) + " after " + std::to_string(chains.trips) + " steps";
    return std::nullopt;
  };
  bind_variant(c, *variant, device.device, problem);
  c.cost = {kernels::fma_chain_flops(*variant, problem(dry_refs(c.operands, device.device))), 0};
  return c;
}

// ---- memory: copy and triad ----

// STREAM: each array at least 4x the largest cache.
std::int64_t stream_array_elements(std::size_t largest_cache, std::size_t element_size) {
  std::int64_t bytes = 1;
  while (bytes < 4 * std::int64_t(largest_cache)) bytes *= 2;
  return bytes / std::int64_t(element_size);
}

std::vector<AxisValue> default_counts(const DeviceContext& device, DType) {
  const std::int64_t n = device.device.is_cpu()
                             ? stream_array_elements(device.last_level_cache(), 8)
                             : std::max<std::int64_t>(stream_array_elements(device.l2_bytes, 4), std::int64_t{1} << 28);
  return {std::vector{n}};
}

std::span<const kernels::TriadVariant> triad_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_triad_variants() : kernels::cuda_triad_variants();
}

std::optional<Case> build_memory(const Point& p) {
  const Device device = p.device->device;
  const DType dtype = device.is_cpu() ? DType::f64 : DType::f32;
  const std::int64_t n = p.integer("n");
  const std::string compute(dtype_name(dtype));
  CaseName name{"peak", p.variant, compute, device.str(), {{"n", n}}, {}};
  Case c;
  if (p.variant == "copy") {
    c = copy_case(name, kernels::variant_named(copy_variants(device.kind), device.is_cpu() ? "simd" : "vec16"), dtype, n,
                  device);
  } else {
    c.name = name;
    c.cost = triad_cost(n, dtype);
    c.operands = {Operand::output_of("a", dtype, {n}), Operand::input("b", dtype, {n}, Fill::small_integers),
                  Operand::input("c", dtype, {n}, Fill::small_integers)};
    const auto problem = [](std::span<const TensorRef> ops) { return kernels::TriadProblem{ops[0], ops[1], ops[2], 3.0}; };
    c.validation.reference = [problem](std::span<const TensorRef> ops) { kernels::triad_reference(problem(ops)); };
    bind_variant(c, triad_variants(device.kind)[0], device, problem);
  }
  c.bound = Bound::memory;
  c.compute = compute;
  c.ceiling = "memory:" + p.variant;
  return c;
}

// ---- tensor cores: cuBLASLt GEMMs ----

#ifdef FLOPSCOPE_HAVE_CUDA
// The compute mode a --dtypes entry asks of the tensor cores: f32 storage runs as TF32, and
// e5m2 (which cuBLASLt pairs with e4m3 only) as e5m2 x e4m3.
ComputeMode gemm_mode(DType dtype) {
  if (dtype == DType::f32) return ComputeMode::tf32;
  if (dtype == DType::f8e5m2) return ComputeMode::f8e5m2_e4m3;
  return natural_compute_mode(dtype);
}

std::optional<Case> build_gemm(const Point& p) {
  const DeviceContext& device = *p.device;
  if (p.dtype == DType::f64) return std::nullopt;
  const ComputeMode mode = gemm_mode(p.dtype);
  const ComputeModeInfo& info = compute_mode_info(mode);
  const std::int64_t size = p.integer("gemm"), m = size, n = size, k = size;
  const std::string key(info.peak_key);
  Case c;
  c.name = {"peak", "cublaslt", std::string(info.name), device.device.str(), {{"m", m}, {"n", n}, {"k", k}}, {}};
  c.cost = matmul_cost(m, n, k, info.a, info.b, DType::f32);
  c.bound = Bound::compute;
  c.compute = key;
  c.ceiling = "compute:" + key;
  // A stored k x m (column-major, transposed in the op), B k x n, D m x n column-major f32.
  c.operands = {Operand::input("a", info.a, {m, k}, Fill::small_integers),
                Operand::input("b", info.b, {n, k}, Fill::small_integers), Operand::output_of("d", DType::f32, {n, m})};
  if (info.a == DType::f8e4m3 || info.a == DType::f8e5m2)
    if (device.sm_major * 10 + device.sm_minor < 89)
      c.skip = "fp8 tensor cores need sm_89 or newer; " + device.name + " is sm_" + std::to_string(device.sm_major) +
               std::to_string(device.sm_minor);
  c.prepare = [mode_name = std::string(info.name), m, n, k](std::span<const TensorRef> ops) -> kernels::Runner {
    std::string error;
    std::shared_ptr<kernels::cuda::GemmPlan> plan(
        kernels::cuda::gemm_plan_create(mode_name, int(m), int(n), int(k), &error), kernels::cuda::gemm_plan_destroy);
    if (!plan) throw std::runtime_error("cuBLASLt " + mode_name + ": " + error);
    const void *a = ops[0].element_data(), *b = ops[1].element_data();
    float* d = ops[2].ptr<float>();
    return [plan, a, b, d](kernels::Stream stream) { kernels::cuda::gemm_run(plan.get(), a, b, d, stream); };
  };
  // Sampled outputs against exact integer dot products (inputs are small integers).
  c.validation.check = [m, n, k](std::span<const TensorRef> host, Counters&) -> std::optional<std::string> {
    for (int sample = 0; sample < 16; ++sample) {
      const std::int64_t i = std::int64_t(sample) * 7919 % m, j = std::int64_t(sample) * 104729 % n;
      double expected = 0;
      for (std::int64_t kk = 0; kk < k; ++kk)
        expected += load_element(host[0].ptr<unsigned char>() + (i * k + kk) * std::int64_t(host[0].element_size()),
                                 host[0].dtype) *
                    load_element(host[1].ptr<unsigned char>() + (j * k + kk) * std::int64_t(host[1].element_size()),
                                 host[1].dtype);
      const float got = host[2].ptr<float>()[j * m + i];
      if (double(got) != expected)
        return "D(" + std::to_string(i) + "," + std::to_string(j) + ") = " + std::to_string(got) + ", exact " +
               std::to_string(expected);
    }
    return std::nullopt;
  };
  return c;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::vector<Bench> benches = {
      {.name = "FMA chains", .variants = chain_names, .axes = {}, .build = build_chains},
      {.name = "memory",
       .variants = [](Device::Kind) { return std::vector<std::string>{"copy", "triad"}; },
       .uses_dtypes = false,
       .axes = {"n"},
       .build = build_memory},
  };
#ifdef FLOPSCOPE_HAVE_CUDA
  benches.push_back({.name = "tensor-core GEMMs",
                     .variants = [](Device::Kind kind) {
                       return kind == Device::Kind::cuda ? std::vector<std::string>{"cublaslt"} : std::vector<std::string>{};
                     },
                     .axes = {"gemm"},
                     .build = build_gemm});
#endif
  const Family family{
      .binary = "bench_peak",
      .summary = "Measured ceilings: FMA chains, tensor-core GEMMs, copy and STREAM triad past 4x the last-level cache.",
      .dtypes = {DType::f64, DType::f32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2},
      .default_dtypes = {DType::f64, DType::f32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2},
      .axes = {{.name = "n", .flag = "sizes", .help = "element counts of the bandwidth arrays", .defaults = default_counts},
               {.name = "gemm",
                .flag = "gemm-sizes",
                .help = "m = n = k of the tensor-core GEMMs",
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{std::vector<std::int64_t>{8192}}; }}},
      .benches = benches,
      .measures_ceilings = true,
  };
  return run_family(argc, argv, family);
}
