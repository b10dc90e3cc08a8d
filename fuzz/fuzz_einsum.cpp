// einsum patterns and shapes as `flopscope einsum` takes them. The input is lines: the pattern,
// then one shape per operand as --shapes reads it ("2x3", "2^40x7", "scalar"; at most 4). A plan
// is a PatternError, a SizeOverflow, or consistent: FLOPs are the sum of 2*batch*m*k*n over its
// bmm steps, exact; the optimal order never costs more than left to right; the form it read
// gives the same plan when asked for; on small shapes einsum() computes an output of the
// planned shape.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli_numbers.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/einops.hpp"
#include "fuzz_check.hpp"

using namespace flopscope;

namespace {

std::optional<EinsumPlan> plan_or_error(std::string_view pattern, const std::vector<Shape>& shapes, EinsumOrder order,
                                        EinsumForm form) {
  try {
    return einsum_plan(pattern, shapes, order, form);
  } catch (const PatternError&) {
    return std::nullopt;
  } catch (const SizeOverflow&) {
    return std::nullopt;
  }
}

void check_plan(const EinsumPlan& plan, const std::vector<Shape>& shapes) {
  FUZZ_CHECK(plan.input_axes.size() == shapes.size(), "input_axes per operand");
  for (std::size_t i = 0; i < shapes.size(); ++i)
    FUZZ_CHECK(plan.input_axes[i].size() == shapes[i].size(), "input_axes per dimension of operand " + std::to_string(i));
  FUZZ_CHECK(plan.output_axes.size() == plan.output_shape.size(), "output axes and shape");
  for (std::int64_t size : plan.output_shape) FUZZ_CHECK(size >= 0, "negative output size");
  Count128 flops = 0, elementwise = 0;
  for (const EinsumStep& step : plan.steps) {
    FUZZ_CHECK(step.flops >= 0 && step.elementwise_flops >= 0, "negative count in a " + step.kind + " step");
    if (step.kind == "bmm")
      FUZZ_CHECK(Count128{step.flops} == Count128{2} * step.batch * step.m * step.k * step.n,
                 "bmm FLOPs " + std::to_string(step.flops) + " != 2*batch*m*k*n");
    else
      FUZZ_CHECK(step.flops == 0, step.kind + " step with matmul FLOPs");
    flops += step.flops;
    elementwise += step.elementwise_flops;
  }
  FUZZ_CHECK(Count128{plan.flops} == flops, "plan FLOPs != sum of its steps");
  FUZZ_CHECK(Count128{plan.elementwise_flops} == elementwise, "elementwise FLOPs != sum of its steps");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto lines = fuzz::split(fuzz::text_of(data, size), '\n');
  if (lines.size() < 2 || lines.size() > 5) return 0;
  std::vector<Shape> shapes;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto shape = cli::parse_shape_argument(lines[i]);
    if (!shape || shape->size() > 8) return 0;
    shapes.push_back(std::move(*shape));
  }
  const std::string_view pattern = lines[0];
  const auto left = plan_or_error(pattern, shapes, EinsumOrder::left_to_right, EinsumForm::automatic);
  const auto best = plan_or_error(pattern, shapes, EinsumOrder::optimal, EinsumForm::automatic);
  if (!left) {
    // A pattern error does not depend on the order; an overflow on the way may (optimal skips it).
    return 0;
  }
  check_plan(*left, shapes);
  FUZZ_CHECK(best.has_value(), "left to right has a plan, the optimal order none");
  check_plan(*best, shapes);
  FUZZ_CHECK(best->flops <= left->flops, "optimal costs more than left to right");
  FUZZ_CHECK(best->output_shape == left->output_shape && best->output_axes == left->output_axes, "orders disagree");
  const auto same_form = plan_or_error(pattern, shapes, EinsumOrder::left_to_right, left->form);
  FUZZ_CHECK(same_form && same_form->flops == left->flops && same_form->output_shape == left->output_shape,
             "the form read does not give the same plan");

  // Small enough to compute: every axis' product at most 2^12 (einsum walks all of them once).
  Count128 space = 1;
  for (const auto& shape : shapes)
    for (std::int64_t dim : shape) space = std::min<Count128>(space * (dim > 0 ? dim : 1), 4097);  // no overflow
  if (space > 4096) return 0;
  std::vector<Tensor> operands;
  for (std::size_t i = 0; i < shapes.size(); ++i) operands.push_back(randn(shapes[i], i, {DType::f64}));
  try {
    const Tensor out = einsum(pattern, operands, left->form);
    FUZZ_CHECK(out.shape() == left->output_shape, "einsum() output " + shape_str(out.shape()) + ", planned " +
                                                      shape_str(left->output_shape));
  } catch (const PatternError&) {
    FUZZ_CHECK(false, "einsum() rejects what einsum_plan accepted");
  }
  return 0;
}
