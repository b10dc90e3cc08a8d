// copy/<variant>/<dtype>/<device>/n=<elements>: contiguous copies of n elements, src -> dst.
// Bytes per iteration: 2 * n * element size (each element read once and written once; the
// write-allocate read of dst is not counted, so variants that avoid it by streaming stores show
// it as higher bandwidth). Default sizes sweep from L1-resident to past 4x the last-level cache
// (STREAM's rule) and to at least 256 MiB on the CPU (bench_convert's large size: the report sets
// each conversion against a copy of the same f32 array), in x4 steps, so the cache hierarchy
// shows up.
#include <vector>

#include "copy_cases.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

// Array sizes in bytes: `smallest`, x4, ... up to the first power of two >= 4 x `largest_cache`
// and >= `at_least`.
std::vector<std::int64_t> default_array_bytes(std::int64_t smallest, std::int64_t largest_cache, std::int64_t at_least) {
  std::int64_t last = 1;
  while (last < 4 * largest_cache || last < at_least) last *= 2;
  std::vector<std::int64_t> sizes;
  for (std::int64_t bytes = smallest; bytes < last; bytes *= 4) sizes.push_back(bytes);
  sizes.push_back(last);
  return sizes;
}

std::vector<AxisValue> default_counts(const DeviceContext& device, DType dtype) {
  const auto cache = static_cast<std::int64_t>(device.device.is_cpu() ? device.last_level_cache()
                                                                       : std::max(device.l2_bytes, std::size_t{64} << 20));
  const std::vector<std::int64_t> bytes = device.device.is_cpu() ? default_array_bytes(4096, cache, std::int64_t{256} << 20)
                                                                 : default_array_bytes(std::int64_t{64} << 10, cache, 0);
  std::vector<AxisValue> counts;
  for (std::int64_t b : bytes) counts.emplace_back(std::vector{b / std::int64_t(dtype_size(dtype))});
  return counts;
}

std::vector<VariantRow> variant_names(Device::Kind kind) { return table_rows(copy_variants(kind)); }

std::optional<Case> build(const Point& p) {
  const auto& variant = kernels::variant_named(copy_variants(p.device->device.kind), p.variant);
  return copy_case({"copy", p.variant, std::string(dtype_name(p.dtype)), p.device->device.str(), {{"n", p.integer("n")}}, {}},
                   variant, p.dtype, p.integer("n"), p.device->device);
}

}  // namespace

int main(int argc, char** argv) {
  const Family family{
      .binary = "bench_copy",
      .summary = "Contiguous copies of n elements, every dtype (bytes are bytes: --dtypes=all shows it).",
      .dtypes = {kAllDTypes.begin(), kAllDTypes.end()},
      .default_dtypes = {DType::f32},
      .axes = {{.name = "n", .flag = "sizes", .help = "element counts", .defaults = default_counts}},
      .benches = {{.name = "copy", .variants = variant_names, .axes = {"n"}, .build = build}},
      .suites = {{"quick", {"--dtypes=f32", "--sizes=1Ki,64Ki,1Mi,16Mi"}},
                 // In L2 and far past it (1 GiB arrays: against the 4.8 TB/s of an H200).
                 {"gpu", {"--dtypes=f32", "--sizes=2^22,2^28", "--benchmark_repetitions=3", "--benchmark_min_time=0.05"}},
                 // Every dtype, a size that is no multiple of a vector (the tails).
                 {"smoke", {"--dtypes=all", "--sizes=4099"}}},
  };
  return run_family(argc, argv, family);
}
