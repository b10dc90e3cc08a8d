// peak/<variant>/<dtype>/<device>/<shape>: the measured ceilings of each device.
//   Compute: independent FMA chains at the widest vectors (CPU: AVX-512, else AVX2; bf16 dot
//   products and fp16 FMA where the CPU has them), GPU: FMA chains on every CUDA core, and the
//   tensor cores through the matmul family's cuBLASLt GEMMs (tf32, f16, bf16, fp8 pairs; fp8 also
//   with fast accumulation, fast_accum=1).
//   Memory: copy and STREAM triad on arrays past 4x the last-level cache (on a GPU filled on the
//   device and validated by samples: no host copy of GiBs, no host-memory skip).
// Each case's label says which ceiling it measures (ceiling=compute:f32, ceiling=memory:triad).
// With --write-ceilings=DIR this binary writes DIR/<device key>.json from its own results (the
// best median per label), which every later bench binary reads (FORMAT.md).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "copy_cases.hpp"
#include "flopscope/kernels/hash.hpp"
#include "flopscope/kernels/matmul.hpp"
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

std::vector<VariantRow> chain_names(Device::Kind kind) { return table_rows(chain_variants(kind)); }

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
  c.measures = CeilingRef{Bound::compute, key};
  c.operands = {Operand::output_of("out", DType::f64, {threads})};
  const auto problem = [mode, trips](std::span<const TensorRef> ops) { return chain_problem(ops[0], mode, trips); };
  // Every thread's value, bit for bit: the scalar recurrence.
  const int products = variant->info.flops_per_lane / 2;  // multiply-adds a lane a step
  c.validation.check = [problem, products](std::span<const TensorRef> host, Counters&) -> std::optional<std::string> {
    const kernels::FmaChainProblem chains = problem(host);
    const double expected =
        kernels::fma_chain_reference(chains.mode, chains.trips, chains.start, chains.a, chains.b, products);
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

// The elements a sampled validation reads: the first, the last and 1022 spread by a hash.
std::vector<std::int64_t> sample_indices(std::int64_t n) {
  std::vector<std::int64_t> indices = {0, n - 1};
  for (std::uint64_t s = 0; s < 1022; ++s) indices.push_back(std::int64_t(kernels::hash_index(7, s) % std::uint64_t(n)));
  return indices;
}

std::string hex(std::uint64_t bits) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(bits));
  return text;
}

float as_f32(std::uint64_t bits) {
  const auto word = static_cast<std::uint32_t>(bits);
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

// On a CUDA device the arrays (GiBs) are filled on the device and validated by samples, with no
// host copy (Validation::sampled): dst = src bit for bit, a = b + 3c exactly (small integers),
// and each input sample the fill's value.
void validate_on_device(Case& c, const std::string& variant, std::int64_t n) {
  if (variant == "copy") {
    const std::size_t size = dtype_size(c.operands[1].dtype), bytes = storage_bytes(c.operands[1]);
    c.validation.sampled = [n, size, bytes](const ElementReader& read) -> std::optional<std::string> {
      for (std::int64_t i : sample_indices(n)) {
        const std::uint64_t src = read(1, i), dst = read(0, i);
        if (src != random_bits_element(fill_seed(1), i, size, bytes))
          return "src[" + std::to_string(i) + "] = " + hex(src) + " is not the fill's value";
        if (dst != src) return "dst[" + std::to_string(i) + "] = " + hex(dst) + ", src " + hex(src);
      }
      return std::nullopt;
    };
    return;
  }
  c.validation.sampled = [n](const ElementReader& read) -> std::optional<std::string> {
    for (std::int64_t i : sample_indices(n)) {
      const float a = as_f32(read(0, i)), b = as_f32(read(1, i)), cc = as_f32(read(2, i));
      if (b != kernels::small_integer(std::uint64_t(i), fill_seed(1)) ||
          cc != kernels::small_integer(std::uint64_t(i), fill_seed(2)))
        return "b[" + std::to_string(i) + "] or c[" + std::to_string(i) + "] is not the fill's value";
      if (a != b + 3.0f * cc)
        return "a[" + std::to_string(i) + "] = " + std::to_string(a) + ", b + 3c = " + std::to_string(b + 3.0f * cc);
    }
    return std::nullopt;
  };
}

std::optional<Case> build_memory(const Point& p) {
  const Device device = p.device->device;
  const DType dtype = device.is_cpu() ? DType::f64 : DType::f32;
  const std::int64_t n = p.integer("n");
  const std::string compute(dtype_name(dtype));
  CaseName name{"peak", p.variant, compute, device.str(), {{"n", n}}, {}};
  Case c;
  const auto* triad = kernels::find_variant(triad_variants(device.kind), p.variant);
  if (!triad) {  // the copy row
    c = copy_case(name, fastest_copy(device.kind), dtype, n, device);
  } else {
    c.name = name;
    c.cost = triad_cost(n, dtype);
    c.operands = {Operand::output_of("a", dtype, {n}), Operand::input("b", dtype, {n}, Fill::small_integers),
                  Operand::input("c", dtype, {n}, Fill::small_integers)};
    const auto problem = [](std::span<const TensorRef> ops) { return kernels::TriadProblem{ops[0], ops[1], ops[2], 3.0}; };
    c.validation.reference = [problem](std::span<const TensorRef> ops) { kernels::triad_reference(problem(ops)); };
    bind_variant(c, *triad, device, problem);
  }
  c.bound = Bound::memory;
  c.compute = compute;
  c.measures = CeilingRef{Bound::memory, p.variant};
  if (device.is_cuda()) validate_on_device(c, p.variant, n);
  return c;
}

// ---- tensor cores: cuBLASLt GEMMs ----

// The compute mode a --dtypes entry asks of the tensor cores: f32 storage runs as TF32, and
// e5m2 (which cuBLASLt pairs with e4m3 only) as e5m2 x e4m3.
ComputeMode gemm_mode(DType dtype) {
  if (dtype == DType::f32) return ComputeMode::tf32;
  if (dtype == DType::f8e5m2) return ComputeMode::f8e5m2_e4m3;
  return natural_compute_mode(dtype);
}

// The CUDA matmul row that takes fast_accum and the fp8 scales (a vendor's: cuBLASLt), or nullptr.
const kernels::MatmulVariant* gemm_variant() {
  for (const auto& v : kernels::cuda_matmul_variants())
    if (v.info.fast_accum) return &v;
  return nullptr;
}

// C (m x n, f32) = A (m x k) · B (k x n) through gemm_variant(), in the NT
// layout (B the transposed view of a row-major n x k array: cuBLAS's TN, which fp8 requires and the
// others accept). fp8 runs twice: with cuBLASLt's default accumulation, and with
// CUBLASLT_MATMUL_DESC_FAST_ACCUM (fast_accum=1 in the name: partial sums are not promoted to f32
// between tensor-core steps); both are ceilings of compute:f8, of which the faster counts.
std::optional<Case> build_gemm(const Point& p, bool fast_accum) {
  const DeviceContext& device = *p.device;
  if (p.dtype == DType::f64) return std::nullopt;
  const ComputeMode mode = gemm_mode(p.dtype);
  const ComputeModeInfo& info = compute_mode_info(mode);
  const bool fp8 = info.peak_key == "f8";
  if (fast_accum && !fp8) return std::nullopt;
  const auto* gemm = gemm_variant();
  if (!gemm) return std::nullopt;
  const std::int64_t size = p.integer("gemm"), m = size, n = size, k = size;
  const std::string key(info.peak_key);
  Case c;
  c.name = {"peak", std::string(gemm->name), std::string(info.name), device.device.str(), {{"m", m}, {"n", n}, {"k", k}}, {}};
  if (fast_accum) c.name.extras = {{"fast_accum", "1"}};
  c.cost = matmul_cost(m, n, k, info.a, info.b, DType::f32);
  c.bound = Bound::compute;
  c.compute = key;
  c.measures = CeilingRef{Bound::compute, key};
  c.operands = {Operand::input("a", info.a, {m, k}, Fill::small_integers),
                {"b", info.b, {k, n}, {1, k}, 0, false, Fill::small_integers, {}},
                Operand::output_of("c", DType::f32, {m, n})};
  const auto problem = [mode, fast_accum](std::span<const TensorRef> ops) {
    kernels::MatmulProblem matmul{ops[0], ops[1], ops[2], mode};
    matmul.fast_accum = fast_accum;
    return matmul;
  };
  if (!bind_variant(c, *gemm, device.device, problem)) return std::nullopt;
  // Sampled outputs against exact integer dot products (inputs are small integers).
  c.validation.check = [m, n, k](std::span<const TensorRef> host, Counters&) -> std::optional<std::string> {
    const auto element = [](const TensorRef& t, std::int64_t row, std::int64_t column) {
      return load_element(t.ptr<unsigned char>() + (row * t.strides[0] + column * t.strides[1]) * std::int64_t(t.element_size()),
                          t.dtype);
    };
    for (int sample = 0; sample < 16; ++sample) {
      const std::int64_t i = std::int64_t(sample) * 7919 % m, j = std::int64_t(sample) * 104729 % n;
      double expected = 0;
      for (std::int64_t kk = 0; kk < k; ++kk) expected += element(host[0], i, kk) * element(host[1], kk, j);
      const double got = element(host[2], i, j);
      if (got != expected)
        return "C(" + std::to_string(i) + "," + std::to_string(j) + ") = " + std::to_string(got) + ", exact " +
               std::to_string(expected);
    }
    return std::nullopt;
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Bench> benches = {
      {.name = "FMA chains", .variants = chain_names, .axes = {}, .build = build_chains},
      {.name = "memory",
       .variants =
           [](Device::Kind kind) {
             std::vector<VariantRow> rows = {{"copy", "bench_copy's fastest kernel on this device", kernels::Role::own}};
             for (auto& row : table_rows(triad_variants(kind))) rows.push_back(std::move(row));
             return rows;
           },
       .uses_dtypes = false,
       .axes = {"n"},
       .build = build_memory},
  };
  const auto gemm_on_cuda = [](Device::Kind kind) {
    const auto* gemm = gemm_variant();
    if (kind != Device::Kind::cuda || !gemm) return std::vector<VariantRow>{};
    return table_rows(std::span<const kernels::MatmulVariant>(gemm, 1));
  };
  benches.push_back({.name = "tensor-core GEMMs",
                     .variants = gemm_on_cuda,
                     .axes = {"gemm"},
                     .build = [](const Point& p) { return build_gemm(p, false); }});
  benches.push_back({.name = "fp8 GEMMs with fast accumulation",
                     .variants = gemm_on_cuda,
                     .axes = {"gemm"},
                     .build = [](const Point& p) { return build_gemm(p, true); }});
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
      .suites = {{"quick", {"--sizes=2^22"}},
                 {"gpu", {"--benchmark_repetitions=3", "--benchmark_min_time=0.1"}},
                 {"smoke", {"--sizes=65539", "--gemm-sizes=256"}}},
  };
  return run_family(argc, argv, family);
}
