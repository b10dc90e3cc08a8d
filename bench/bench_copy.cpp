// copy/<variant>/<dtype>/<device>/n=<elements>: contiguous copies of n elements, src -> dst.
// Bytes per iteration: 2 * n * element size (each element read once and written once; the
// write-allocate read of dst is not counted, so variants that avoid it by streaming stores show
// it as higher bandwidth). Default sizes sweep from L1-resident to past 4x the last-level cache
// (STREAM's rule) and to at least 256 MiB on the CPU (bench_convert's large size: the report sets
// each conversion against a copy of the same f32 array), in x4 steps, so the cache hierarchy
// shows up.
#include <algorithm>
#include <vector>

#include "flopscope/kernels/copy.hpp"
#include "flopscope/sizes.hpp"
#include "copy_cases.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

// Array sizes in bytes: 4 KiB, 16 KiB, ... up to the first power of two >= 4 x `largest_cache`
// and >= `at_least`.
std::vector<std::size_t> default_array_bytes(std::size_t smallest, std::size_t largest_cache, std::size_t at_least) {
  std::size_t last = 1;
  while (last < 4 * largest_cache || last < at_least) last *= 2;
  std::vector<std::size_t> sizes;
  for (std::size_t bytes = smallest; bytes < last; bytes *= 4) sizes.push_back(bytes);
  sizes.push_back(last);
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  FamilySpec spec{.binary = "bench_copy",
                  .variants = {},
                  .dtypes = {kAllDTypes.begin(), kAllDTypes.end()},
                  .default_dtypes = {DType::f32},  // bytes are bytes: --dtypes=all shows it
                  .shape_flag = "sizes",
                  .shape_help = "element counts"};
  for (const auto& v : kernels::cpu_copy_variants()) spec.variants.emplace_back(v.name);
#ifdef FLOPSCOPE_HAVE_CUDA
  for (const auto& v : kernels::cuda::copy_variants()) spec.variants.emplace_back(v.name);
#else
  spec.variants.insert(spec.variants.end(), {"memcpy_async", "vec16"});  // named, so that flags stay valid
#endif
  Harness harness(&argc, argv, spec);
  const Axes& axes = harness.axes();

  for (const Device& device : axes.devices) {
    const DeviceContext& ctx = harness.device(device);
    std::vector<std::size_t> array_bytes =
        device.is_cpu() ? default_array_bytes(4096, std::max({ctx.l3_bytes, ctx.l2_bytes, std::size_t{1} << 20}),
                                              std::size_t{256} << 20)
                        : default_array_bytes(std::size_t{64} << 10, std::max(ctx.l2_bytes, std::size_t{64} << 20), 0);
    for (DType dtype : axes.dtypes) {
      const std::size_t element_size = dtype_size(dtype);
      std::vector<std::size_t> counts;
      if (!axes.sizes.empty())
        for (auto n : axes.sizes) counts.push_back(static_cast<std::size_t>(n));
      else
        for (auto b : array_bytes) counts.push_back(b / element_size);
      for (std::size_t count : counts) {
        auto name = [&](std::string_view variant) {
          return CaseName{.family = "copy",
                          .variant = std::string(variant),
                          .dtype = std::string(dtype_name(dtype)),
                          .device = device.str(),
                          .shape = {{"n", static_cast<std::int64_t>(count)}},
                          .extras = {}};
        };
        if (device.is_cpu()) {
          for (const auto& variant : kernels::cpu_copy_variants()) {
            if (!harness.wants_variant(std::string(variant.name))) continue;
            harness.add(name(variant.name), [&variant, count, element_size](benchmark::State& state, const DeviceContext& d) {
              cpu_copy_case(state, d, variant, count, element_size);
            });
          }
        } else {
#ifdef FLOPSCOPE_HAVE_CUDA
          for (const auto& variant : kernels::cuda::copy_variants()) {
            if (!harness.wants_variant(std::string(variant.name))) continue;
            bool hot = axes.hot;
            harness.add(name(variant.name), [&variant, count, element_size, hot](benchmark::State& state,
                                                                                  const DeviceContext& d) {
              cuda_copy_case(state, d, hot, variant, count, element_size);
            });
          }
#endif
        }
      }
    }
  }
  return harness.run();
}
