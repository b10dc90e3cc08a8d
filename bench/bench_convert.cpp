// convert/<variant>/<from>-><to>/<device>/n=<elements>: bulk conversion of n elements between
// f32 and a narrow dtype (f16, bf16, f8e4m3, f8e5m2), both directions: "f32->bf16" encodes
// (round to nearest even, overflow as PyTorch), "bf16->f32" decodes.
// Bytes per iteration: n * (size(from) + size(to)) (each element read once, written once),
// reported against the memory ceiling. Default sizes: 4 MiB and 256 MiB of f32 (cache-resident
// and far past the last-level cache).
// Beside them, the baseline convert/copy/f32->f32/<device>/n=: the identity conversion, a copy
// of the same f32 array by the kernel that bench_copy and bench_peak time (CPU "simd", CUDA
// "vec16"), so that each conversion is set against a copy measured in the same process
// (--benchmark_enable_random_interleaving=true interleaves their repetitions: on a shared
// machine, the fairest ratio).
// Inputs: f32 values with random signs, mantissas and exponents in [2^-20, 2^20] (what tensors
// hold; some overflow the fp8 formats), or random narrow bit patterns (NaNs included).
// Validation before timing: against kernels::encode_reference / decode_reference (bit for bit)
// up to 4Mi elements; above that against the "scalar" variant, which the tests check against
// the reference bit for bit (the reference itself would take seconds at 64Mi elements).
#include <omp.h>

#include <cstring>
#include <string>
#include <vector>

#include "flopscope/kernels/convert.hpp"
#include "flopscope/numerics.hpp"
#include "copy_cases.hpp"
#include "harness/harness.hpp"
#ifdef FLOPSCOPE_HAVE_CUDA
#include <cuda_runtime.h>

#include "harness/cuda.hpp"
#endif

using namespace flopscope;
using namespace flopscope::bench;

namespace {

constexpr std::size_t kReferenceLimit = std::size_t{1} << 22;

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void fill_f32(float* data, std::size_t count, std::uint64_t seed) {
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t r = mix(seed ^ (i * 0x2545f4914f6cdd1dull));
    const auto sign = static_cast<std::uint32_t>(r & 1) << 31;
    const auto exponent = static_cast<std::uint32_t>(127 - 20 + (r >> 1) % 41) << 23;
    const auto mantissa = static_cast<std::uint32_t>(r >> 8) & 0x7fffffu;
    data[i] = std::bit_cast<float>(sign | exponent | mantissa);
  }
}

struct Direction {
  DType narrow;
  bool encode;  // f32 -> narrow; else narrow -> f32
  std::size_t in_size() const { return encode ? 4 : dtype_size(narrow); }
  std::size_t out_size() const { return encode ? dtype_size(narrow) : 4; }
  std::string name() const {
    return encode ? "f32->" + std::string(dtype_name(narrow)) : std::string(dtype_name(narrow)) + "->f32";
  }
};

void fill_input(void* data, std::size_t count, const Direction& direction) {
  if (direction.encode)
    fill_f32(static_cast<float*>(data), count, 42);
  else
    fill_random_bytes(data, count * direction.in_size(), 42);
}

// The expected output: the reference for small arrays, the scalar variant for large ones.
void expected_output(const void* in, void* out, std::size_t count, const Direction& direction) {
  const kernels::ConvertVariant& scalar = *kernels::find_cpu_convert_variant("scalar");
  if (direction.encode) {
    if (count <= kReferenceLimit)
      kernels::encode_reference(static_cast<const float*>(in), out, count, direction.narrow, false);
    else
      scalar.encode(static_cast<const float*>(in), out, count, direction.narrow, false);
  } else {
    if (count <= kReferenceLimit)
      kernels::decode_reference(in, static_cast<float*>(out), count, direction.narrow);
    else
      scalar.decode(in, static_cast<float*>(out), count, direction.narrow);
  }
}

double bytes_moved(std::size_t count, const Direction& direction) {
  return double(count) * double(direction.in_size() + direction.out_size());
}

void cpu_case(benchmark::State& state, const DeviceContext& device, const kernels::ConvertVariant& variant,
              std::size_t count, Direction direction) {
  if (auto reason = variant.unavailable()) {
    skip(state, std::string(variant.name) + ": " + *reason);
    return;
  }
  const std::size_t in_bytes = count * direction.in_size(), out_bytes = count * direction.out_size();
  if (skip_if_too_large(state, device, in_bytes + 2 * out_bytes)) return;
  HostBuffer in(in_bytes), out(out_bytes), expected(out_bytes);
  fill_input(in.data, count, direction);
  std::memset(out.data, 0xA5, out_bytes);  // poison
  auto run = [&] {
    if (direction.encode)
      variant.encode(reinterpret_cast<const float*>(in.data), out.data, count, direction.narrow, false);
    else
      variant.decode(in.data, reinterpret_cast<float*>(out.data), count, direction.narrow);
  };
  run();
  expected_output(in.data, expected.data, count, direction);
  if (auto mismatch = compare_exact(out.data, expected.data, count, direction.out_size())) {
    fail(state, std::string(variant.name) + ": " + *mismatch);
    return;
  }
  {
    NvtxRange timed("timed");
    for (auto _ : state) {
      run();
      benchmark::ClobberMemory();
    }
  }
  set_counters(state, device, {.flops = 0, .bytes = bytes_moved(count, direction), .bound = Bound::memory});
}

#ifdef FLOPSCOPE_HAVE_CUDA
void cuda_case(benchmark::State& state, const DeviceContext& device, bool hot, std::size_t count, Direction direction) {
  const std::size_t in_bytes = count * direction.in_size(), out_bytes = count * direction.out_size();
  if (skip_if_too_large(state, device, in_bytes + out_bytes + 2 * device.l2_bytes)) return;
  cuda::DeviceBuffer in(in_bytes), out(out_bytes);
  if (!in.error.empty() || !out.error.empty()) {
    skip(state, "cudaMalloc: " + in.error + out.error);
    return;
  }
  std::vector<unsigned char> host_in(in_bytes), host_out(out_bytes), host_expected(out_bytes);
  fill_input(host_in.data(), count, direction);
  cudaMemcpy(in.data, host_in.data(), in_bytes, cudaMemcpyHostToDevice);
  cuda::fill_bytes(out.data, 0xA5, out_bytes);
  auto enqueue = [&](void* stream) {
    if (direction.encode)
      kernels::cuda::encode(static_cast<const float*>(in.data), out.data, count, direction.narrow, false, stream);
    else
      kernels::cuda::decode(in.data, static_cast<float*>(out.data), count, direction.narrow, stream);
  };
  enqueue(nullptr);
  cudaMemcpy(host_out.data(), out.data, out_bytes, cudaMemcpyDeviceToHost);
  if (auto error = cuda::take_error()) {
    fail(state, "intrinsics: CUDA error: " + *error);
    return;
  }
  expected_output(host_in.data(), host_expected.data(), count, direction);
  if (auto mismatch = compare_exact(host_out.data(), host_expected.data(), count, direction.out_size())) {
    fail(state, "intrinsics: " + *mismatch);
    return;
  }
  cuda::time_cuda(state, device, hot, enqueue);
  set_counters(state, device, {.flops = 0, .bytes = bytes_moved(count, direction), .bound = Bound::memory});
}
#endif

}  // namespace

int main(int argc, char** argv) {
  FamilySpec spec{.binary = "bench_convert",
                  .variants = {},
                  .dtypes = {kernels::kNarrowDTypes.begin(), kernels::kNarrowDTypes.end()},
                  .default_dtypes = {kernels::kNarrowDTypes.begin(), kernels::kNarrowDTypes.end()},
                  .shape_flag = "sizes",
                  .shape_help = "element counts"};
  spec.variants.emplace_back("copy");  // the f32->f32 baseline
  for (const auto& v : kernels::cpu_convert_variants()) spec.variants.emplace_back(v.name);
  spec.variants.emplace_back("intrinsics");  // CUDA; named without CUDA too, so that flags stay valid
  Harness harness(&argc, argv, spec);
  const Axes& axes = harness.axes();

  std::vector<std::size_t> counts;
  if (!axes.sizes.empty())
    for (auto n : axes.sizes) counts.push_back(static_cast<std::size_t>(n));
  else
    counts = {std::size_t{1} << 20, std::size_t{1} << 26};  // 4 MiB and 256 MiB of f32

  for (const Device& device : axes.devices) {
    if (harness.wants_variant("copy")) {
      for (std::size_t count : counts) {
        const CaseName name{.family = "convert",
                            .variant = "copy",
                            .dtype = "f32->f32",
                            .device = device.str(),
                            .shape = {{"n", static_cast<std::int64_t>(count)}},
                            .extras = {}};
        if (device.is_cpu()) {
          harness.add(name, [count](benchmark::State& state, const DeviceContext& d) {
            cpu_copy_case(state, d, cpu_copy_variant("simd"), count, sizeof(float));
          });
        } else {
#ifdef FLOPSCOPE_HAVE_CUDA
          const bool hot = axes.hot;
          harness.add(name, [count, hot](benchmark::State& state, const DeviceContext& d) {
            cuda_copy_case(state, d, hot, cuda_copy_variant("vec16"), count, sizeof(float));
          });
#endif
        }
      }
    }
    for (DType narrow : axes.dtypes) {
      for (bool encode : {true, false}) {
        const Direction direction{narrow, encode};
        for (std::size_t count : counts) {
          auto name = [&](std::string_view variant) {
            return CaseName{.family = "convert",
                            .variant = std::string(variant),
                            .dtype = direction.name(),
                            .device = device.str(),
                            .shape = {{"n", static_cast<std::int64_t>(count)}},
                            .extras = {}};
          };
          if (device.is_cpu()) {
            for (const auto& variant : kernels::cpu_convert_variants()) {
              if (!variant.supports(narrow) || !harness.wants_variant(std::string(variant.name))) continue;
              harness.add(name(variant.name), [&variant, count, direction](benchmark::State& state, const DeviceContext& d) {
                cpu_case(state, d, variant, count, direction);
              });
            }
          } else {
#ifdef FLOPSCOPE_HAVE_CUDA
            if (!harness.wants_variant("intrinsics")) continue;
            const bool hot = axes.hot;
            harness.add(name("intrinsics"), [count, direction, hot](benchmark::State& state, const DeviceContext& d) {
              cuda_case(state, d, hot, count, direction);
            });
#endif
          }
        }
      }
    }
  }
  return harness.run();
}
