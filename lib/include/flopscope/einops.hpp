// einops on flopscope tensors: rearrange and reduce with named axes, and einsum in einops' named
// form and in the classic single-letter form, with its output shape and FLOP count.
//
// rearrange(x, "... (heads hidden1) -> ... heads hidden1", {{"heads", 2}})
//   Axes are names (letters, digits, _), "..." (the dimensions no name covers, at most once per
//   side) and "1" or "()" (a dimension of size 1). Parentheses group axes: on the left a group
//   splits one dimension (one unknown length per group is inferred), on the right it merges axes
//   into one. It is x.view(split) -> permute -> reshape(merged): a view whenever the last reshape
//   is one (PyTorch's rule), and the result says which.
// reduce(x, "b c (h 2) (w 2) -> b c h w", Reduction::max)
//   As rearrange, but axes missing on the right are reduced (sum, mean, max, min, prod), and
//   numbers on the left are anonymous axes of that length (always reduced).
// einsum(x, y, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2"), or "bij,bkj->bik"
//   Note [einsum forms]: the named form separates axis names by spaces and needs "->"; the
//   classic form (torch.einsum's) has one letter per axis, ignores spaces, and without "->" its
//   output is "..." then the letters used once, in A-Z a-z order. EinsumForm::automatic reads a
//   pattern as named when any operand or the output has two space-separated names or a name with
//   a digit or "_", classic otherwise ("hidden,hidden->" is six letters: say EinsumForm::named).
//   Repeated axes in one operand take a diagonal; axes missing from the output are summed; size-1
//   dimensions broadcast, as in torch.einsum.
//
// Note [einsum FLOPs]: einsum_plan counts what torch.utils.flop_counter counts for torch.einsum on
// the same shapes, which contracts operands pairwise through bmm (aten/src/ATen/native/Linear.cpp):
//   - an axis that only one remaining operand has and the output lacks is summed out of it first
//     (a "sum" step: no matmul FLOPs);
//   - a pair with no axis to contract is an elementwise "mul" (no matmul FLOPs, as PyTorch's
//     counter does not count mul);
//   - otherwise a "bmm" of batch = axes both keep, m = left-only kept axes, k = contracted axes,
//     n = right-only kept axes: 2*batch*m*k*n FLOPs. For one pair whose every axis is in both
//     operands or the output, that is 2 * the product of all distinct axis sizes, so
//     x @ y.transpose(-2, -1) and "bij,bkj->bik" count the same.
// With three operands, EinsumOrder::left_to_right contracts ((x0 x1) x2), as torch.einsum does
// without opt_einsum; EinsumOrder::optimal tries every pairwise order and keeps the one with the
// fewest FLOPs (as opt_einsum's "optimal" path does for small counts; torch.einsum takes
// opt_einsum's path when that package is installed). Sum/mul steps are counted apart, in
// elementwise_flops (one FLOP per addition or product), following DESIGN.md.
//
// Every pattern error is a PatternError: one line naming the pattern and the position, and a
// caret() display for people.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flopscope/tensor.hpp"

namespace flopscope {

// Axis lengths given by name: {{"heads", 2}}.
using AxisLengths = std::vector<std::pair<std::string, std::int64_t>>;

class PatternError : public std::invalid_argument {
 public:
  // what(): "<operation> pattern '<pattern>': <problem> (at position <position>)"
  PatternError(std::string_view operation, std::string_view pattern, std::size_t position, const std::string& problem);
  const std::string& pattern() const { return pattern_; }
  std::size_t position() const { return position_; }
  // Two lines: the pattern, and a caret under the position.
  std::string caret() const;

 private:
  std::string pattern_;
  std::size_t position_;
};

struct RearrangeResult {
  Tensor tensor;
  bool is_view;  // true: shares x's storage (no copy); false: the merge needed a copy
};

RearrangeResult rearrange(const Tensor& x, std::string_view pattern, const AxisLengths& lengths = {});

// rearrange on paper, for a contiguous input whose every left-side axis has a length in `lengths`
// (no "..."): the input's shape, the split-and-permuted view of it (always a view: what a copy
// reads), the output's shape, and whether that is a view (its strides) or needs a copy (then the
// strides are the copy's, contiguous). Nothing is allocated; PatternError as rearrange.
struct RearrangePlan {
  Shape input_shape;
  Strides input_strides;
  Shape permuted_shape;
  Strides permuted_strides;
  Shape output_shape;
  Strides output_strides;
  bool is_view = false;
};
RearrangePlan rearrange_plan(std::string_view pattern, const AxisLengths& lengths);

enum class Reduction { sum, mean, max, min, prod };
// "sum", "mean", "max", "min", "prod"; std::invalid_argument otherwise.
Reduction parse_reduction(std::string_view name);

// The result is a new contiguous tensor of x's dtype (each output rounded once from a double sum).
Tensor reduce(const Tensor& x, std::string_view pattern, Reduction reduction, const AxisLengths& lengths = {});
Tensor reduce(const Tensor& x, std::string_view pattern, std::string_view reduction, const AxisLengths& lengths = {});

enum class EinsumForm { automatic, classic, named };
enum class EinsumOrder { left_to_right, optimal };

struct EinsumStep {
  std::string kind;       // "bmm", "mul" or "sum"
  std::string left, right, result;  // operands as axis lists: "x0[b i j]", "x1[b k j]", "[b i k]"
  // bmm only: the axes in each role and their products.
  std::vector<std::string> batch_axes, m_axes, k_axes, n_axes;
  std::int64_t batch = 1, m = 1, k = 1, n = 1;
  std::int64_t flops = 0;              // 2*batch*m*k*n for bmm, 0 otherwise
  std::int64_t elementwise_flops = 0;  // sum: additions; mul: products
};

struct EinsumPlan {
  EinsumForm form = EinsumForm::classic;      // as read (never automatic)
  EinsumOrder order = EinsumOrder::left_to_right;
  std::vector<std::vector<std::string>> input_axes;  // per operand, per dimension ("...0" for ellipsis dims)
  std::vector<std::string> output_axes;
  Shape output_shape;
  std::int64_t flops = 0;              // matmul-class, what torch.utils.flop_counter reports
  std::int64_t elementwise_flops = 0;
  std::vector<EinsumStep> steps;
};

EinsumPlan einsum_plan(std::string_view pattern, std::span<const Shape> shapes,
                       EinsumOrder order = EinsumOrder::left_to_right, EinsumForm form = EinsumForm::automatic);

// The FLOPs of an einsum as a formula in its axis names, for any sizes: "2*b*t*d*f", a sum of such
// terms (one per bmm of the left-to-right order, batch m k n axes in that order; "0" when nothing
// is contracted). It is einsum_plan's count with each axis a symbol: the plan is made at length 2
// for every axis (no axis broadcasts) and each bmm step's axes are written out. PatternError for
// "..." (its dimensions need shapes).
struct EinsumFormula {
  EinsumForm form = EinsumForm::classic;
  std::vector<std::vector<std::string>> input_axes;
  std::vector<std::string> output_axes;
  std::vector<std::vector<std::string>> terms;  // each term's axes; its FLOPs are 2 x their product
  std::string flops;                            // "2*b*t*d*f" or "2*b*i*j*k + 2*b*i*k*l"
};
EinsumFormula einsum_formula(std::string_view pattern, EinsumForm form = EinsumForm::automatic);

// The value, by one walk over every axis (output and contracted) accumulating in double: a
// reference. Operands must share one dtype; the result has it, row-major, on the first's device.
Tensor einsum(std::string_view pattern, std::span<const Tensor> operands, EinsumForm form = EinsumForm::automatic);
// einops' argument order: tensors first.
Tensor einsum(const Tensor& x, std::string_view pattern);
Tensor einsum(const Tensor& x, const Tensor& y, std::string_view pattern);
Tensor einsum(const Tensor& x, const Tensor& y, const Tensor& z, std::string_view pattern);

}  // namespace flopscope
