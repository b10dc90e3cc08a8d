#include "copy_cases.hpp"

namespace flopscope::bench {

Case copy_case(CaseName name, const kernels::CopyVariant& variant, DType dtype, std::int64_t n, Device device) {
  Case c;
  c.name = std::move(name);
  c.cost = copy_cost(n, dtype);
  c.bound = Bound::memory;
  c.operands = {Operand::output_of("dst", dtype, {n}), Operand::input("src", dtype, {n})};
  c.validation.reference = [](std::span<const TensorRef> ops) { kernels::copy_reference({ops[0], ops[1]}); };
  bind_variant(c, variant, device, [](std::span<const TensorRef> ops) { return kernels::CopyProblem{ops[0], ops[1]}; });
  return c;
}

std::span<const kernels::CopyVariant> copy_variants(Device::Kind kind) {
  return kind == Device::Kind::cpu ? kernels::cpu_copy_variants() : kernels::cuda_copy_variants();
}

}  // namespace flopscope::bench
