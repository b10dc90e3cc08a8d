// peak/<variant>/<dtype>/<device>/<shape>: the measured ceilings of each device.
//   Compute: independent FMA chains at the widest vectors (CPU: AVX-512, else AVX2; bf16 dot
//   products and fp16 FMA where the CPU has them), GPU: FMA chains on every CUDA core, and the
//   tensor cores through cuBLASLt GEMMs (tf32, f16, bf16, f8).
//   Memory: copy and STREAM triad on arrays past 4x the last-level cache.
// Each case's label says which ceiling it measures (ceiling=compute:f32, ceiling=memory:triad);
// `flopscope-analysis ceilings RUN_DIR` turns the best of each into results/ceilings/<key>.json,
// which later runs read.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "flopscope/kernels/copy.hpp"
#include "flopscope/kernels/hash.hpp"
#include "flopscope/kernels/peak.hpp"
#include "flopscope/sizes.hpp"
#include "copy_cases.hpp"
#include "harness/harness.hpp"
#ifdef FLOPSCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "harness/cuda.hpp"
#endif

using namespace flopscope;
using namespace flopscope::bench;

namespace {

// FMA chain inputs: the recurrence acc = acc * a + b is checked lane for lane against a scalar
// reference. For bf16 and f16, a = -1, b = 1 keep every step exact in the narrow type.
struct ChainInputs {
  double start, a, b;
};

ChainInputs chain_inputs(std::string_view compute) {
  if (compute == "bf16" || compute == "f16") return {0.0, -1.0, 1.0};
  return {0.5, 0.999999, 1e-3};
}

constexpr std::uint64_t kTripsPerCall = 200'000;  // ~0.5 ms per call at 4 GHz

void cpu_compute_case(benchmark::State& state, const DeviceContext& device, const kernels::CpuPeakKernel& kernel) {
  if (!kernel.available()) {
    skip(state, "this CPU lacks " + std::string(kernel.instruction));
    return;
  }
  const auto in = chain_inputs(kernel.compute);
  // Validate on every thread before timing.
  constexpr std::uint64_t check_trips = 1000;
  const double expected = kernel.reference(check_trips, in.start, in.a, in.b);
  int mismatches = 0;
  double got_bad = 0;
#pragma omp parallel reduction(+ : mismatches)
  {
    double out = 0;
    kernel.run(check_trips, in.start, in.a, in.b, &out);
    if (std::memcmp(&out, &expected, sizeof out) != 0) {
      ++mismatches;
      got_bad = out;
    }
  }
  if (mismatches) {
    fail(state, std::string(kernel.name) + " " + std::string(kernel.compute) + ": lane 0 after " +
                    std::to_string(check_trips) + " steps is " + std::to_string(got_bad) + ", reference " +
                    std::to_string(expected) + " (" + std::to_string(mismatches) + " threads)");
    return;
  }
  const int threads = omp_get_max_threads();
  double flops = 0;
  {
    NvtxRange timed("timed");
    for (auto _ : state) {
      double total = 0;
#pragma omp parallel reduction(+ : total)
      {
        double out = 0;
        total += kernel.run(kTripsPerCall, in.start, in.a, in.b, &out);
        benchmark::DoNotOptimize(out);
      }
      flops = total;
    }
  }
  (void)threads;
  set_counters(state, device, {.flops = flops, .bytes = 0, .bound = Bound::compute, .compute = std::string(kernel.compute),
                               .ceiling = "compute:" + std::string(kernel.compute)});
}

void cpu_triad_case(benchmark::State& state, const DeviceContext& device, std::size_t count) {
  const std::size_t bytes = count * sizeof(double);
  if (skip_if_too_large(state, device, 3 * bytes)) return;
  HostBuffer a(bytes), b(bytes), c(bytes);
  auto* pa = reinterpret_cast<double*>(a.data);
  auto* pb = reinterpret_cast<double*>(b.data);
  auto* pc = reinterpret_cast<double*>(c.data);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < count; ++i) {
    pb[i] = 1.0 + double(i % 1000) * 1e-3;
    pc[i] = 2.0 - double(i % 777) * 1e-3;
    pa[i] = std::nan("");  // poison
  }
  const double scalar = 3.0;
  kernels::triad_f64(pa, pb, pc, scalar, count);
  std::size_t bad = 0;
#pragma omp parallel for reduction(+ : bad)
  for (std::size_t i = 0; i < count; ++i) bad += pa[i] != std::fma(scalar, pc[i], pb[i]);
  if (bad) {
    fail(state, "triad: " + std::to_string(bad) + " of " + std::to_string(count) + " elements differ from b + s*c");
    return;
  }
  for (auto _ : state) {
    kernels::triad_f64(pa, pb, pc, scalar, count);
    benchmark::ClobberMemory();
  }
  set_counters(state, device, {.flops = 2.0 * double(count), .bytes = 3.0 * double(bytes), .bound = Bound::memory,
                               .compute = "f64", .ceiling = "memory:triad"});
}

#ifdef FLOPSCOPE_HAVE_CUDA
template <typename T>
void cuda_fma_case(benchmark::State& state, const DeviceContext& device, bool hot, std::string_view compute) {
  const int blocks = device.sm_count * 16, threads = 256, trips = 1 << 14;
  const T a = T(0.999999), b = T(1e-3);
  cuda::DeviceBuffer out(sizeof(T) * std::size_t(blocks) * threads);
  if (!out.error.empty()) {
    skip(state, "cudaMalloc: " + out.error);
    return;
  }
  auto launch = [&](void* stream, int n) {
    if constexpr (sizeof(T) == 4)
      return kernels::cuda::fma_peak_f32(static_cast<float*>(out.data), blocks, threads, n, a, b, stream);
    else
      return kernels::cuda::fma_peak_f64(static_cast<double*>(out.data), blocks, threads, n, a, b, stream);
  };
  launch(nullptr, 100);
  if (auto error = cuda::take_error()) {
    fail(state, "CUDA error: " + *error);
    return;
  }
  std::vector<T> host(std::size_t(blocks) * threads);
  cudaMemcpy(host.data(), out.data, sizeof(T) * host.size(), cudaMemcpyDeviceToHost);
  for (int tid : {0, 1, 6, 7, 255}) {  // the kernel's recurrence, in the same order
    T sum = 0;
    for (int c = 0; c < kernels::cuda::kCudaPeakChains; ++c) {
      T acc = T(tid % 7 + c) * T(0.001);
      for (int t = 0; t < 100; ++t) acc = std::fma(acc, a, b);
      sum += acc;
    }
    if (host[std::size_t(tid)] != sum) {
      fail(state, "fma chains: thread " + std::to_string(tid) + " gives " + std::to_string(double(host[std::size_t(tid)])) +
                      ", reference " + std::to_string(double(sum)));
      return;
    }
  }
  double flops = 0;
  cuda::time_cuda(state, device, hot, [&](void* stream) { flops = launch(stream, trips); });
  set_counters(state, device, {.flops = flops, .bytes = 0, .bound = Bound::compute, .compute = std::string(compute),
                               .ceiling = "compute:" + std::string(compute)});
}

void cuda_gemm_case(benchmark::State& state, const DeviceContext& device, bool hot, const std::string& dtype,
                    int size) {
  if (dtype.starts_with("f8") && device.sm_major * 10 + device.sm_minor < 89) {
    skip(state, "fp8 tensor cores need sm_89 or newer; " + device.name + " is sm_" + std::to_string(device.sm_major) +
                    std::to_string(device.sm_minor));
    return;
  }
  const int m = size, n = size, k = size;
  const std::size_t element = dtype == "tf32" ? 4 : dtype.starts_with("f8") ? 1 : 2;
  const std::size_t bytes = element * std::size_t(k) * (std::size_t(m) + std::size_t(n)) + 4 * std::size_t(m) * n;
  if (skip_if_too_large(state, device, bytes)) return;
  cuda::DeviceBuffer a(element * std::size_t(k) * m), b(element * std::size_t(k) * n), d(4 * std::size_t(m) * n);
  if (!a.error.empty() || !b.error.empty() || !d.error.empty()) {
    skip(state, "cudaMalloc: " + a.error + b.error + d.error);
    return;
  }
  kernels::cuda::fill_small_integers(a.data, dtype, std::size_t(k) * m, 1);
  kernels::cuda::fill_small_integers(b.data, dtype, std::size_t(k) * n, 2);
  cuda::fill_bytes(d.data, 0xFF, 4 * std::size_t(m) * n);  // poison: NaN
  std::string error;
  auto* plan = kernels::cuda::gemm_plan_create(dtype, m, n, k, &error);
  if (!plan) {
    skip(state, "cuBLASLt " + dtype + ": " + error);
    return;
  }
  error = kernels::cuda::gemm_run(plan, a.data, b.data, static_cast<float*>(d.data), nullptr);
  if (auto cuda_error = cuda::take_error()) error += *cuda_error;
  // Validate sampled outputs against exact integer dot products (inputs are in [-2, 2]).
  for (int sample = 0; sample < 16 && error.empty(); ++sample) {
    const std::size_t i = std::size_t(sample * 7919) % std::size_t(m), j = std::size_t(sample * 104729) % std::size_t(n);
    double expected = 0;
    for (std::size_t kk = 0; kk < std::size_t(k); ++kk)
      expected += double(kernels::small_integer(kk + i * std::size_t(k), 1)) * double(kernels::small_integer(kk + j * std::size_t(k), 2));
    float got = 0;
    cudaMemcpy(&got, static_cast<float*>(d.data) + i + j * std::size_t(m), sizeof got, cudaMemcpyDeviceToHost);
    if (double(got) != expected)
      error = "D(" + std::to_string(i) + "," + std::to_string(j) + ") = " + std::to_string(got) + ", exact " +
              std::to_string(expected);
  }
  if (!error.empty()) {
    fail(state, "cuBLASLt " + dtype + ": " + error);
    kernels::cuda::gemm_plan_destroy(plan);
    return;
  }
  cuda::time_cuda(state, device, hot, [&](void* stream) {
    kernels::cuda::gemm_run(plan, a.data, b.data, static_cast<float*>(d.data), stream);
  });
  kernels::cuda::gemm_plan_destroy(plan);
  const std::string compute = dtype.starts_with("f8") ? "f8" : dtype;
  set_counters(state, device, {.flops = 2.0 * m * double(n) * k, .bytes = double(bytes), .bound = Bound::compute,
                               .compute = compute, .ceiling = "compute:" + compute});
}

void cuda_memory_case(benchmark::State& state, const DeviceContext& device, bool hot, bool triad, std::size_t count) {
  const std::size_t bytes = count * sizeof(float);
  if (skip_if_too_large(state, device, (triad ? 3 : 2) * bytes)) return;
  cuda::DeviceBuffer a(bytes), b(bytes), c(bytes);
  if (!a.error.empty() || !b.error.empty() || !c.error.empty()) {
    skip(state, "cudaMalloc: " + a.error + b.error + c.error);
    return;
  }
  kernels::cuda::fill_small_integers(b.data, "f32", count, 3);
  kernels::cuda::fill_small_integers(c.data, "f32", count, 4);
  cuda::fill_bytes(a.data, 0xFF, bytes);
  const auto& vec16 = cuda_copy_variant("vec16");
  auto run = [&](void* stream) {
    if (triad)
      kernels::cuda::triad_f32(static_cast<float*>(a.data), static_cast<const float*>(b.data),
                               static_cast<const float*>(c.data), 3.0f, count, stream);
    else
      vec16.run(a.data, b.data, count, sizeof(float), stream);
  };
  run(nullptr);
  std::vector<float> got(std::min<std::size_t>(count, 4096)), host_b(got.size()), host_c(got.size());
  cudaMemcpy(got.data(), a.data, got.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(host_b.data(), b.data, got.size() * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(host_c.data(), c.data, got.size() * 4, cudaMemcpyDeviceToHost);
  if (auto error = cuda::take_error()) {
    fail(state, "CUDA error: " + *error);
    return;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    float expected = triad ? host_b[i] + 3.0f * host_c[i] : host_b[i];  // small integers: exact
    if (got[i] != expected) {
      fail(state, std::string(triad ? "triad" : "copy") + ": element " + std::to_string(i) + " is " +
                      std::to_string(got[i]) + ", expected " + std::to_string(expected));
      return;
    }
  }
  cuda::time_cuda(state, device, hot, run);
  set_counters(state, device, {.flops = triad ? 2.0 * double(count) : 0, .bytes = (triad ? 3.0 : 2.0) * double(bytes),
                               .bound = Bound::memory, .compute = "f32",
                               .ceiling = triad ? "memory:triad" : "memory:copy"});
}
#endif

std::size_t stream_array_elements(std::size_t largest_cache, std::size_t element_size) {
  std::size_t bytes = 1;
  while (bytes < 4 * largest_cache) bytes *= 2;  // STREAM: each array at least 4x the LLC
  return bytes / element_size;
}

}  // namespace

int main(int argc, char** argv) {
  FamilySpec spec{.binary = "bench_peak",
                  .variants = {},
                  .dtypes = {DType::f64, DType::f32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2},
                  .default_dtypes = {DType::f64, DType::f32, DType::bf16, DType::f16, DType::f8e4m3},
                  .shape_flag = "sizes",
                  .shape_help = "element counts of the bandwidth arrays"};
  for (const auto& k : kernels::cpu_peak_kernels())
    if (std::find(spec.variants.begin(), spec.variants.end(), k.name) == spec.variants.end())
      spec.variants.emplace_back(k.name);
  spec.variants.insert(spec.variants.end(), {"copy", "triad", "fma", "cublaslt"});
  Harness harness(&argc, argv, spec);
  const Axes& axes = harness.axes();
  auto wants_dtype = [&](DType d) { return std::find(axes.dtypes.begin(), axes.dtypes.end(), d) != axes.dtypes.end(); };

  for (const Device& device : axes.devices) {
    const DeviceContext& ctx = harness.device(device);
    auto name = [&](std::string variant, std::string dtype, std::vector<std::pair<std::string, std::int64_t>> shape) {
      return CaseName{.family = "peak", .variant = std::move(variant), .dtype = std::move(dtype),
                      .device = device.str(), .shape = std::move(shape), .extras = {}};
    };
    std::vector<std::size_t> counts;
    for (auto n : axes.sizes) counts.push_back(std::size_t(n));
    if (device.is_cpu()) {
      for (const auto& kernel : kernels::cpu_peak_kernels()) {
        auto dtype = parse_dtype(kernel.compute);
        if (!harness.wants_variant(std::string(kernel.name)) || !dtype || !wants_dtype(*dtype)) continue;
        harness.add(name(std::string(kernel.name), std::string(kernel.compute), {{"trips", kTripsPerCall}}),
                    [&kernel](benchmark::State& state, const DeviceContext& d) { cpu_compute_case(state, d, kernel); });
      }
      if (counts.empty())
        counts.push_back(stream_array_elements(std::max({ctx.l3_bytes, ctx.l2_bytes, std::size_t{1} << 20}), 8));
      for (std::size_t count : counts) {
        if (harness.wants_variant("copy"))
          harness.add(name("copy", "f64", {{"n", std::int64_t(count)}}),
                      [count](benchmark::State& state, const DeviceContext& d) {
                        cpu_copy_case(state, d, cpu_copy_variant("simd"), count, sizeof(double),
                                      {.compute = "f64", .ceiling = "memory:copy"});
                      });
        if (harness.wants_variant("triad"))
          harness.add(name("triad", "f64", {{"n", std::int64_t(count)}}),
                      [count](benchmark::State& state, const DeviceContext& d) { cpu_triad_case(state, d, count); });
      }
    } else {
#ifdef FLOPSCOPE_HAVE_CUDA
      const bool hot = axes.hot;
      if (harness.wants_variant("fma")) {
        if (wants_dtype(DType::f32))
          harness.add(name("fma", "f32", {{"trips", 1 << 14}}), [hot](benchmark::State& s, const DeviceContext& d) {
            cuda_fma_case<float>(s, d, hot, "f32");
          });
        if (wants_dtype(DType::f64))
          harness.add(name("fma", "f64", {{"trips", 1 << 14}}), [hot](benchmark::State& s, const DeviceContext& d) {
            cuda_fma_case<double>(s, d, hot, "f64");
          });
      }
      if (harness.wants_variant("cublaslt")) {
        const int size = axes.sizes.empty() ? 8192 : int(std::min<std::int64_t>(axes.sizes.front(), 16384));
        std::vector<std::string> gemm_dtypes;
        if (wants_dtype(DType::f32)) gemm_dtypes.push_back("tf32");
        for (DType d : {DType::f16, DType::bf16, DType::f8e4m3, DType::f8e5m2})
          if (wants_dtype(d)) gemm_dtypes.emplace_back(dtype_name(d));
        for (const auto& dtype : gemm_dtypes)
          harness.add(name("cublaslt", dtype, {{"m", size}, {"n", size}, {"k", size}}),
                      [hot, dtype, size](benchmark::State& s, const DeviceContext& d) {
                        cuda_gemm_case(s, d, hot, dtype, size);
                      });
      }
      std::vector<std::size_t> gpu_counts = counts;
      if (gpu_counts.empty()) gpu_counts.push_back(std::max<std::size_t>(stream_array_elements(ctx.l2_bytes, 4), 1u << 28));
      for (std::size_t count : gpu_counts)
        for (bool triad : {false, true})
          if (harness.wants_variant(triad ? "triad" : "copy"))
            harness.add(name(triad ? "triad" : "copy", "f32", {{"n", std::int64_t(count)}}),
                        [hot, triad, count](benchmark::State& s, const DeviceContext& d) {
                          cuda_memory_case(s, d, hot, triad, count);
                        });
#endif
    }
  }
  return harness.run();
}
