// convert/<variant>/<from>-><to>/<device>/n=<elements>: bulk conversion of n elements between
// f32 and a narrow dtype (f16, bf16, f8e4m3, f8e5m2), both directions: "f32->bf16" encodes
// (round to nearest even, overflow as PyTorch), "bf16->f32" decodes.
// Bytes per iteration: n * (size(from) + size(to)) (each element read once, written once),
// reported against the memory ceiling. Default sizes: 4 MiB and 256 MiB of f32 (cache-resident
// and far past the last-level cache).
// Beside them, the baseline convert/copy/f32->f32/<device>/n=: the identity conversion, a copy
// of the same f32 array by bench_copy's fastest kernel (the one bench_peak's ceiling times), so
// that each conversion is set against a copy measured in the same process
// (--benchmark_enable_random_interleaving=true interleaves their repetitions: on a shared
// machine, the fairest ratio).
// Inputs: f32 values with random signs, mantissas and exponents in [2^-20, 2^20] (what tensors
// hold; some overflow the fp8 formats), or random narrow bit patterns (NaNs included).
// Validation before timing: against kernels::convert_reference (bit for bit) up to 4Mi
// elements; above that against the row marked checker (one element at a time), which the tests check against the
// reference bit for bit (the reference itself would take seconds at 64Mi elements).
#include <omp.h>

#include <bit>
#include <string>
#include <vector>

#include "copy_cases.hpp"
#include "flopscope/kernels/convert.hpp"
#include "flopscope/kernels/hash.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

constexpr std::int64_t kReferenceLimit = std::int64_t{1} << 22;

// f32 with random signs and mantissas, exponents in [2^-20, 2^20].
void fill_tensor_like_f32(const TensorRef& host) {
  float* data = host.ptr<float>();
  const std::int64_t count = host.numel();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint64_t r = kernels::hash_index(42, std::uint64_t(i));
    const auto sign = static_cast<std::uint32_t>(r & 1) << 31;
    const auto exponent = static_cast<std::uint32_t>(127 - 20 + (r >> 1) % 41) << 23;
    const auto mantissa = static_cast<std::uint32_t>(r >> 8) & 0x7fffffu;
    data[i] = std::bit_cast<float>(sign | exponent | mantissa);
  }
}

std::span<const kernels::ConvertVariant> convert_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_convert_variants() : kernels::cuda_convert_variants();
}

std::vector<VariantRow> conversion_names(Device::Kind kind) { return table_rows(convert_variants(kind)); }

// The f32->f32 baseline: bench_copy's own copy kernel.
std::optional<Case> build_baseline(const Point& p) {
  const Device device = p.device->device;
  const auto& copy = fastest_copy(device.kind);
  const std::int64_t n = p.integer("n");
  return copy_case({"convert", "copy", "f32->f32", device.str(), {{"n", n}}, {}}, copy, DType::f32, n, device);
}

std::optional<Case> build_conversion(const Point& p) {
  const Device device = p.device->device;
  const bool encode = p.choice("direction") == "encode";
  const DType from = encode ? DType::f32 : p.dtype, to = encode ? p.dtype : DType::f32;
  const std::int64_t n = p.integer("n");
  Case c;
  c.name = {"convert", p.variant, std::string(dtype_name(from)) + "->" + std::string(dtype_name(to)), device.str(),
            {{"n", n}}, {}};
  c.beside = build_baseline(p)->name.str();
  c.cost = convert_cost(n, from, to);
  c.bound = Bound::memory;
  Operand src = Operand::input("src", from, {n});
  if (encode) {
    src.fill = Fill::custom;
    src.custom_fill = fill_tensor_like_f32;
  }
  c.operands = {Operand::output_of("dst", to, {n}), src};
  const auto problem = [](std::span<const TensorRef> ops) { return kernels::ConvertProblem{ops[0], ops[1], false}; };
  c.validation.reference = [n, problem](std::span<const TensorRef> ops) {
    if (n <= kReferenceLimit) return kernels::convert_reference(problem(ops));
    kernels::checker(kernels::cpu_convert_variants()).prepare(problem(ops))(nullptr);
  };
  const auto& variant = kernels::variant_named(convert_variants(device.kind), p.variant);
  if (!bind_variant(c, variant, device, problem)) return std::nullopt;
  return c;
}

std::vector<AxisValue> default_counts(const DeviceContext&, DType) {
  return {std::vector<std::int64_t>{std::int64_t{1} << 20}, std::vector<std::int64_t>{std::int64_t{1} << 26}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<DType> narrow(kernels::kNarrowDTypes.begin(), kernels::kNarrowDTypes.end());
  const Family family{
      .binary = "bench_convert",
      .summary = "Bulk conversion of n elements between f32 and each narrow dtype, both ways, beside an f32 copy.",
      .dtypes = narrow,
      .default_dtypes = narrow,
      .axes = {{.name = "n", .flag = "sizes", .help = "element counts", .defaults = default_counts},
               {.name = "direction",
                .flag = "directions",
                .kind = Axis::Kind::choices,
                .help = "encode (f32 -> narrow), decode (narrow -> f32)",
                .choices = {"encode", "decode"},
                .defaults = [](const DeviceContext&, DType) {
                  return std::vector<AxisValue>{std::string("encode"), std::string("decode")};
                }}},
      .benches = {{.name = "f32 copy baseline",
                   .variants = [](Device::Kind) { return std::vector<VariantRow>{copy_baseline_row()}; },
                   .uses_dtypes = false,
                   .axes = {"n"},
                   .build = build_baseline},
                  {.name = "conversions", .variants = conversion_names, .axes = {"direction", "n"}, .build = build_conversion}},
      // Conversions and their f32->f32 copy baseline share the machine's noise fairly.
      .suites = {{"default", {"--benchmark_enable_random_interleaving=true"}},
                 {"quick", {"--dtypes=f16,bf16", "--sizes=1Mi", "--benchmark_enable_random_interleaving=true"}},
                 {"gpu",
                  {"--sizes=2^26", "--benchmark_repetitions=2", "--benchmark_min_time=0.05",
                   "--benchmark_enable_random_interleaving=true"}},
                 {"smoke", {"--sizes=4099"}}},
  };
  return run_family(argc, argv, family);
}
