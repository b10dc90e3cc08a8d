#include "copy_cases.hpp"

namespace flopscope::bench {

Case copy_case(CaseName name, const kernels::CopyVariant& variant, DType dtype, std::int64_t n, Device device) {
  Case c;
  c.name = std::move(name);
  c.cost = copy_cost(n, dtype);
  c.bound = Bound::memory;
  c.operands = {Operand::output_of("dst", dtype, {n}), Operand::input("src", dtype, {n})};
  // A contiguous copy's reference is its source: dst must equal src bit for bit (a memcmp, where
  // copy_reference's element-by-element walk took seconds at 2^26 elements, per repetition).
  c.validation.check = [](std::span<const TensorRef> ops, Counters&) -> std::optional<std::string> {
    if (auto mismatch = compare_exact(ops[0], ops[1])) return "dst: " + *mismatch;
    return std::nullopt;
  };
  bind_variant(c, variant, device, [](std::span<const TensorRef> ops) { return kernels::CopyProblem{ops[0], ops[1]}; });
  return c;
}

Case copy_baseline(const std::string& family, DType dtype, std::int64_t n, Device device) {
  const VariantRow row = copy_baseline_row();
  return copy_case({family, row.name, std::string(dtype_name(dtype)), device.str(), {{"n", n}}, {}}, baseline_copy(device.kind),
                   dtype, n, device);
}

VariantRow copy_baseline_row() {
  return {"copy", "a contiguous copy of the same bytes (bench_copy's kernel), run beside each case", kernels::Role::baseline};
}

std::vector<Bench> benches_with_baselines(const std::vector<BaselinedGroup>& groups,
                                          std::function<std::vector<VariantRow>(Device::Kind)> variants) {
  std::vector<Bench> benches;
  for (const BaselinedGroup& group : groups)
    benches.push_back({.name = group.name + " copy baseline",
                       .variants = [](Device::Kind) { return std::vector<VariantRow>{copy_baseline_row()}; },
                       .axes = group.axes,
                       .build = group.baseline});
  for (const BaselinedGroup& group : groups)
    benches.push_back({.name = group.name, .variants = variants, .axes = group.axes,
                       .build = [group](const Point& p) -> std::optional<Case> {
                         std::optional<Case> c = group.build(p);
                         if (c)
                           if (const auto copy = group.baseline(p)) c->beside = copy->name.str();
                         return c;
                       }});
  return benches;
}

std::span<const kernels::CopyVariant> copy_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_copy_variants() : kernels::cuda_copy_variants();
}

const kernels::CopyVariant& fastest_copy(Device::Kind kind) {
  const kernels::CopyVariant* best = kernels::fastest_row(copy_variants(kind));
  if (!best) throw std::logic_error("no copy row of this device is marked fastest");
  return *best;
}

const kernels::CopyVariant& baseline_copy(Device::Kind kind) {
  if (kind == Device::Kind::cpu) return fastest_copy(kind);
  const auto* baseline = kernels::find_role(copy_variants(kind), kernels::Role::baseline);
  if (!baseline) throw std::logic_error("no copy row of this device is its baseline");
  return *baseline;
}

}  // namespace flopscope::bench
