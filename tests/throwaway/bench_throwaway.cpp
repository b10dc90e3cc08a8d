// throwaway/<variant>/<dtype>/<device>/n=<elements>: y = 2·x, the README's "adding a family"
// recipe done once, so that scripts/recipes_check.sh can show that a new family appears in
// --describe, its suites and the report's generic table without any other file knowing it. Built
// only with -DFLOPSCOPE_THROWAWAY=ON; never part of a suite of the real build.
#include <algorithm>

#include "copy_cases.hpp"
#include "harness/harness.hpp"

using namespace flopscope;
using namespace flopscope::bench;

namespace {

struct ScaleProblem {
  TensorRef y, x;
};

void scale_loop(const ScaleProblem& p, kernels::Stream) {
  const auto* x = p.x.ptr<float>();
  auto* y = p.y.ptr<float>();
  for (std::int64_t i = 0; i < p.x.numel(); ++i) y[i] = 2 * x[i];
}

std::optional<std::string> cpu_only(const ScaleProblem&) { return std::nullopt; }

// The family's kernel table: one row.
constexpr kernels::Variant<ScaleProblem> kRows[] = {
    {"loop", "one element at a time", Device::Kind::cpu, cpu_only, kernels::direct<ScaleProblem, scale_loop>},
};

std::vector<VariantRow> rows(Device::Kind kind) {
  if (kind != Device::Kind::cpu) return {};
  return table_rows(std::span<const kernels::Variant<ScaleProblem>>(kRows));
}

std::optional<Case> build(const Point& p) {
  const std::int64_t n = p.integer("n");
  Case c;
  c.name = {"throwaway", p.variant, std::string(dtype_name(p.dtype)), p.device->device.str(), {{"n", n}}, {}};
  c.cost = {n, copy_cost(n, p.dtype).bytes};  // one multiply per element; read x, write y
  c.bound = Bound::memory;
  c.operands = {Operand::output_of("y", p.dtype, {n}), Operand::input("x", p.dtype, {n}, Fill::uniform)};
  c.validation.reference = [](std::span<const TensorRef> ops) { scale_loop({ops[0], ops[1]}, nullptr); };
  const auto& variant = kernels::variant_named(std::span<const kernels::Variant<ScaleProblem>>(kRows), p.variant);
  bind_variant(c, variant, p.device->device, [](std::span<const TensorRef> ops) { return ScaleProblem{ops[0], ops[1]}; });
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const Family family{
      .binary = "bench_throwaway",
      .summary = "y = 2·x: the README's family recipe, checked by scripts/recipes_check.sh.",
      .dtypes = {DType::f32},
      .default_dtypes = {DType::f32},
      .axes = {{.name = "n", .flag = "sizes", .help = "element counts",
                .defaults = [](const DeviceContext&, DType) { return std::vector<AxisValue>{std::vector<std::int64_t>{1 << 20}}; }}},
      .benches = {{.name = "scale", .variants = rows, .axes = {"n"}, .build = build}},
      .suites = {{"quick", {"--sizes=64Ki"}}},
  };
  return run_family(argc, argv, family);
}
