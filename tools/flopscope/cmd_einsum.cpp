// flopscope einsum: the output shape and FLOPs of an einsum, as torch.utils.flop_counter counts
// them (2 per multiply-add, for the bmm/mm that torch.einsum runs; Note [einsum FLOPs] in
// lib/include/flopscope/einops.hpp).
//   flopscope einsum "bij,bkj->bik" --shapes 2x3x4 2x5x4
//   flopscope einsum "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2" --shapes 2x3x4 2x5x4
//   options: --order left-to-right|optimal   --form auto|classic|named   --json
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/einops.hpp"
#include "flopscope/memory.hpp"

namespace flopscope::cli {

namespace {

Shape shape_argument(const std::string& text) {
  auto shape = parse_shape_argument(text);
  if (!shape) throw UsageError{"--shapes: cannot parse '" + text + "' (expected e.g. 2x3x4, or 'scalar')"};
  return *shape;
}

std::string axes_text(const std::vector<std::string>& axes) {
  std::string out;
  for (const auto& axis : axes) out += (out.empty() ? "" : " ") + axis;
  return out;
}

std::string role(const char* name, std::int64_t size, const std::vector<std::string>& axes) {
  return std::string(name) + "=" + std::to_string(size) + (axes.empty() ? "" : " (" + axes_text(axes) + ")");
}

const char* order_name(EinsumOrder order) { return order == EinsumOrder::optimal ? "optimal" : "left-to-right"; }
const char* form_name(EinsumForm form) { return form == EinsumForm::named ? "named" : "classic"; }

void print_json(std::string_view pattern, const EinsumPlan& plan, const std::vector<Shape>& shapes) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : plan.steps)
    steps.push_back({{"kind", s.kind}, {"left", s.left}, {"right", s.right}, {"result", s.result},
                     {"batch", s.batch}, {"m", s.m}, {"k", s.k}, {"n", s.n},
                     {"flops", s.flops}, {"elementwise_flops", s.elementwise_flops}});
  nlohmann::json out = {{"pattern", pattern},
                        {"form", form_name(plan.form)},
                        {"order", order_name(plan.order)},
                        {"input_shapes", shapes},
                        {"input_axes", plan.input_axes},
                        {"output_axes", plan.output_axes},
                        {"output_shape", plan.output_shape},
                        {"flops", plan.flops},
                        {"elementwise_flops", plan.elementwise_flops},
                        {"steps", steps}};
  std::printf("%s\n", out.dump(2).c_str());
}

// Without --shapes: the FLOPs as a formula in the axis names (einsum_formula).
int print_formula(const std::string& pattern, EinsumForm form, bool json) {
  EinsumFormula formula;
  try {
    formula = einsum_formula(pattern, form);
  } catch (const PatternError& error) {
    throw UsageError{error.what()};
  }
  if (json) {
    const nlohmann::json out = {{"pattern", pattern},           {"form", form_name(formula.form)},
                                {"input_axes", formula.input_axes}, {"output_axes", formula.output_axes},
                                {"flops_formula", formula.flops}, {"terms", formula.terms}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("einsum %s  (%s form)\n", pattern.c_str(), form_name(formula.form));
  for (std::size_t i = 0; i < formula.input_axes.size(); ++i)
    std::printf("  x%zu axes %s\n", i, axes_text(formula.input_axes[i]).c_str());
  std::printf("output axes: %s\n", axes_text(formula.output_axes).c_str());
  std::printf("FLOPs: %s  (2 per multiply-add, as torch.utils.flop_counter counts the bmm/mm torch.einsum runs, "
              "left to right; --shapes for the numbers)\n",
              formula.flops.c_str());
  return 0;
}

}  // namespace

int cmd_einsum(const Args& args) {
  std::optional<std::string> pattern;
  std::vector<Shape> shapes;
  bool shapes_given = false;
  EinsumOrder order = EinsumOrder::left_to_right;
  EinsumForm form = EinsumForm::automatic;
  bool json = false;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    if (name == "--shapes") {
      shapes_given = true;
      const std::string first = options.take_value();
      shapes.push_back(shape_argument(first));
      // Shapes until the next option; a word that is no shape is the pattern, if none came yet.
      while (!options.done() && options.name().empty()) {
        const std::string text = options.take_positional();
        if (!pattern && !parse_shape_argument(text)) pattern = text;
        else shapes.push_back(shape_argument(text));
      }
    } else if (name == "--order") {
      const std::string text = options.take_value();
      if (text == "left-to-right") order = EinsumOrder::left_to_right;
      else if (text == "optimal") order = EinsumOrder::optimal;
      else throw UsageError{"--order: unknown '" + text + "' (expected left-to-right or optimal)"};
    } else if (name == "--form") {
      const std::string text = options.take_value();
      if (text == "auto") form = EinsumForm::automatic;
      else if (text == "classic") form = EinsumForm::classic;
      else if (text == "named") form = EinsumForm::named;
      else throw UsageError{"--form: unknown '" + text + "' (expected auto, classic or named)"};
    } else if (name == "--json") {
      json = (options.take_flag(), true);
    } else if (name.empty()) {
      const std::string text = options.take_positional();
      if (pattern) throw UsageError{"unexpected argument '" + text + "' (one pattern; shapes go after --shapes)"};
      pattern = text;
    } else {
      options.unknown();
    }
  }
  if (!pattern) throw UsageError{"needs a PATTERN, e.g. flopscope einsum \"bij,bkj->bik\" --shapes 2x3x4 2x5x4"};
  if (!shapes_given) return print_formula(*pattern, form, json);
  if (shapes.size() > 3) throw UsageError{"--shapes: 1 to 3 operands (got " + std::to_string(shapes.size()) + ")"};
  const EinsumOrder other = order == EinsumOrder::optimal ? EinsumOrder::left_to_right : EinsumOrder::optimal;
  EinsumPlan plan;
  std::string alternative;  // the other order's FLOPs, for three operands
  try {
    plan = einsum_plan(*pattern, shapes, order, form);
    if (shapes.size() > 2) {
      try {
        alternative = std::to_string(einsum_plan(*pattern, shapes, other, form).flops) + " FLOPs";
      } catch (const SizeOverflow& error) {
        alternative = std::string("its counts overflow (") + error.what() + ")";
      }
    }
  } catch (const PatternError& error) {
    throw UsageError{error.what()};
  } catch (const SizeOverflow& error) {
    std::string given;
    for (const auto& shape : shapes) given += (given.empty() ? "" : " ") + (shape.empty() ? "scalar" : format_shape(shape));
    const bool other_may_fit = order == EinsumOrder::left_to_right && shapes.size() > 2;
    throw UsageError{"--shapes " + given + ": " + error.what() +
                     (other_may_fit ? " (--order optimal may find an order that fits)" : "")};
  }
  if (json) {
    print_json(*pattern, plan, shapes);
    return 0;
  }
  std::printf("einsum %s  (%s form)\n", pattern->c_str(), form_name(plan.form));
  for (std::size_t i = 0; i < shapes.size(); ++i)
    std::printf("  x%zu %-16s axes %s\n", i, shape_str(shapes[i]).c_str(), axes_text(plan.input_axes[i]).c_str());
  std::printf("output shape: %s  axes %s\n", shape_str(plan.output_shape).c_str(), axes_text(plan.output_axes).c_str());
  const std::string grouped = plan.flops >= 10000 ? format_thousands(plan.flops) + "; " : "";
  std::printf("FLOPs: %lld  (%s2 per multiply-add, as torch.utils.flop_counter counts the bmm/mm torch.einsum runs)\n",
              static_cast<long long>(plan.flops), grouped.c_str());
  if (!plan.steps.empty()) std::printf("steps (%s):\n", order_name(plan.order));
  int number = 0;
  for (const auto& s : plan.steps) {
    ++number;
    if (s.kind == "bmm")
      std::printf("  %d. bmm  %s x %s -> %s  %s %s %s %s  FLOPs %lld\n", number, s.left.c_str(), s.right.c_str(),
                  s.result.c_str(), role("batch", s.batch, s.batch_axes).c_str(), role("m", s.m, s.m_axes).c_str(),
                  role("k", s.k, s.k_axes).c_str(), role("n", s.n, s.n_axes).c_str(), static_cast<long long>(s.flops));
    else if (s.kind == "mul")
      std::printf("  %d. mul  %s x %s -> %s  (nothing to contract: elementwise, %lld products, not counted)\n", number,
                  s.left.c_str(), s.right.c_str(), s.result.c_str(), static_cast<long long>(s.elementwise_flops));
    else
      std::printf("  %d. sum  %s -> %s  (%lld additions, not counted)\n", number, s.left.c_str(), s.result.c_str(),
                  static_cast<long long>(s.elementwise_flops));
  }
  if (shapes.size() > 2) {
    std::printf("%s order: %s  (torch.einsum contracts left to right, or along opt_einsum's path when "
                "opt_einsum is installed)\n",
                order_name(other), alternative.c_str());
  }
  return 0;
}

}  // namespace flopscope::cli
