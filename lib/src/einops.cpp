#include "flopscope/einops.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "flopscope/broadcast.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/flop_counter.hpp"

namespace flopscope {

// ---- errors ----------------------------------------------------------------------------------

PatternError::PatternError(std::string_view operation, std::string_view pattern, std::size_t position,
                           const std::string& problem)
    : std::invalid_argument(std::string(operation) + " pattern '" + std::string(pattern) + "': " + problem +
                            " (at position " + std::to_string(position) + ")"),
      pattern_(pattern), position_(position) {}

std::string PatternError::caret() const { return "  " + pattern_ + "\n  " + std::string(position_, ' ') + "^"; }

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string join(const std::vector<std::string>& parts, std::string_view separator = " ") {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string ellipsis_axis(std::size_t i) { return "..." + std::to_string(i); }

// ---- rearrange / reduce patterns -------------------------------------------------------------

struct Atom {
  std::string key;                 // the axis' identity: its name, "...k", or "#<position>" (anonymous)
  std::int64_t anonymous = 0;      // > 0: an anonymous axis of this length ("1", "2", ...)
  bool ellipsis = false;
  std::size_t position = 0;
};

struct Element {  // one dimension of a side: a single atom, or a parenthesized group
  std::vector<Atom> atoms;
  bool group = false;
  std::size_t position = 0;
};

struct Side {
  std::vector<Element> elements;
  bool has_ellipsis = false;
  std::size_t begin = 0;
};

class PatternParser {
 public:
  PatternParser(std::string_view operation, std::string_view pattern) : operation_(operation), pattern_(pattern) {}

  [[noreturn]] void fail(std::size_t position, const std::string& problem) const {
    throw PatternError(operation_, pattern_, position, problem);
  }

  std::pair<Side, Side> sides() const {
    const std::size_t arrow = pattern_.find("->");
    if (arrow == std::string_view::npos) fail(pattern_.size(), "expected '->' between the input and output axes");
    if (const std::size_t second = pattern_.find("->", arrow + 2); second != std::string_view::npos)
      fail(second, "'->' appears more than once");
    return {parse_side(0, arrow, true), parse_side(arrow + 2, pattern_.size(), false)};
  }

 private:
  Side parse_side(std::size_t begin, std::size_t end, bool left) const {
    Side side;
    side.begin = begin;
    std::optional<Element> group;
    std::set<std::string> seen;
    auto add_atom = [&](Atom atom) {
      if (atom.ellipsis) {
        if (side.has_ellipsis) fail(atom.position, "'...' appears more than once on one side");
        if (group && left) fail(atom.position, "'...' inside parentheses is only allowed on the right");
        side.has_ellipsis = true;
      } else if (atom.anonymous == 0) {
        if (!seen.insert(atom.key).second)
          fail(atom.position, "axis '" + atom.key + "' appears more than once on the " + (left ? "left" : "right"));
      }
      if (group) {
        group->atoms.push_back(std::move(atom));
      } else {
        Element element;
        element.position = atom.position;
        element.atoms.push_back(std::move(atom));
        side.elements.push_back(std::move(element));
      }
    };
    std::size_t i = begin;
    while (i < end) {
      const char c = pattern_[i];
      if (is_space(c)) {
        ++i;
      } else if (c == '(') {
        if (group) fail(i, "nested parentheses are not allowed");
        group = Element{{}, true, i};
        ++i;
      } else if (c == ')') {
        if (!group) fail(i, "')' without a matching '('");
        side.elements.push_back(std::move(*group));
        group.reset();
        ++i;
      } else if (c == '.') {
        if (pattern_.substr(i, 3) != "..." || i + 3 > end) fail(i, "'.' that is not part of '...'");
        add_atom(Atom{"...", 0, true, i});
        i += 3;
      } else if (is_name_char(c)) {
        std::size_t j = i;
        while (j < end && is_name_char(pattern_[j])) ++j;
        const std::string token(pattern_.substr(i, j - i));
        if (std::isdigit(static_cast<unsigned char>(token[0]))) {
          if (!std::all_of(token.begin(), token.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); }))
            fail(i, "invalid axis name '" + token + "' (names start with a letter or '_')");
          std::int64_t length = 0;
          const auto [end_of_number, error] = std::from_chars(token.data(), token.data() + token.size(), length);
          if (error != std::errc{} || end_of_number != token.data() + token.size())
            fail(i, "anonymous axis length " + token + " does not fit 64 bits");
          if (length < 1) fail(i, "an anonymous axis must have length >= 1 (got " + token + ")");
          add_atom(Atom{"#" + std::to_string(i), length, false, i});
        } else {
          add_atom(Atom{token, 0, false, i});
        }
        i = j;
      } else {
        fail(i, std::string("unexpected character '") + c + "'");
      }
    }
    if (group) fail(group->position, "'(' is not closed");
    return side;
  }

  std::string_view operation_;
  std::string_view pattern_;
};

// The left side matched against a tensor: its elementary axes, their lengths, and a view of x
// with one dimension per elementary axis (anonymous length-1 axes dropped).
struct Decomposed {
  std::vector<std::string> axes;
  std::map<std::string, std::int64_t> length;
  std::vector<std::string> ellipsis_axes;
  Shape shape;  // of x viewed with one dimension per axis (x's storage, no copy)
  Strides strides;
};

// The sizes and strides of a tensor, all that decompose reads of it.
struct Layout {
  const Shape& shape;
  const Strides& strides;
  std::int64_t dim() const { return static_cast<std::int64_t>(shape.size()); }
};

Decomposed decompose(const PatternParser& parser, const Side& left, const Layout& x, const AxisLengths& lengths,
                     std::string_view pattern) {
  std::map<std::string, std::int64_t> given;
  for (const auto& [name, length] : lengths) given[name] = length;
  const auto named_dims = static_cast<std::int64_t>(left.elements.size()) - (left.has_ellipsis ? 1 : 0);
  if (left.has_ellipsis ? x.dim() < named_dims : x.dim() != named_dims)
    parser.fail(left.begin, "the left side names " + std::to_string(named_dims) + (left.has_ellipsis ? " or more" : "") +
                                " dimensions but the tensor has shape " + shape_str(x.shape) + " (" +
                                std::to_string(x.dim()) + " dimensions)");
  Decomposed out;
  Shape& shape = out.shape;
  Strides& strides = out.strides;
  std::size_t d = 0;  // dimension of x
  for (const auto& element : left.elements) {
    if (element.atoms.size() == 1 && element.atoms[0].ellipsis) {
      const auto count = static_cast<std::size_t>(x.dim() - named_dims);
      for (std::size_t e = 0; e < count; ++e, ++d) {
        const std::string key = ellipsis_axis(e);
        out.ellipsis_axes.push_back(key);
        out.axes.push_back(key);
        out.length[key] = x.shape[d];
        shape.push_back(x.shape[d]);
        strides.push_back(x.strides[d]);
      }
      continue;
    }
    const std::int64_t size = x.shape[d];
    std::int64_t known = 1;
    const Atom* unknown = nullptr;
    for (const auto& atom : element.atoms) {
      if (atom.anonymous > 0) {
        known = checked_mul(known, atom.anonymous, "axis lengths of a group");
      } else if (auto it = given.find(atom.key); it != given.end()) {
        if (it->second < 0) parser.fail(atom.position, "axis '" + atom.key + "' has negative length " + std::to_string(it->second));
        known = checked_mul(known, it->second, "axis lengths of a group");
      } else if (!element.group) {
        known = checked_mul(known, size, "axis lengths of a group");
      } else if (unknown != nullptr) {
        parser.fail(atom.position, "cannot infer the lengths of both '" + unknown->key + "' and '" + atom.key +
                                       "' in one group: give one of them");
      } else {
        unknown = &atom;
      }
    }
    std::int64_t inferred = 0;
    if (unknown != nullptr) {
      if (known == 0 || size % known != 0)
        parser.fail(element.position, "dimension " + std::to_string(d) + " of shape " + shape_str(x.shape) + " (" +
                                          std::to_string(size) + ") is not divisible by " + std::to_string(known));
      inferred = size / known;
    } else if (known != size) {
      parser.fail(element.position, "dimension " + std::to_string(d) + " of shape " + shape_str(x.shape) + " is " +
                                        std::to_string(size) + " but the axes given multiply to " + std::to_string(known));
    }
    // Split dimension d: the innermost atom keeps its stride, each outer one strides over the inner ones.
    std::int64_t stride = x.strides[d];
    std::vector<std::pair<std::int64_t, std::int64_t>> split;  // (length, stride) of each atom, innermost first
    for (auto it = element.atoms.rbegin(); it != element.atoms.rend(); ++it) {
      const std::int64_t length = it->anonymous > 0 ? it->anonymous
                                  : &*it == unknown ? inferred
                                  : given.count(it->key) ? given[it->key]
                                                         : size;
      split.emplace_back(length, stride);
      stride = checked_mul(stride, length, "strides of a split dimension");
    }
    for (std::size_t a = 0; a < element.atoms.size(); ++a) {
      const Atom& atom = element.atoms[a];
      const auto [length, atom_stride] = split[element.atoms.size() - 1 - a];
      if (atom.anonymous == 1) continue;  // a size-1 dimension carries nothing
      out.axes.push_back(atom.key);
      out.length[atom.key] = length;
      shape.push_back(length);
      strides.push_back(atom_stride);
    }
    ++d;
  }
  for (const auto& [name, length] : lengths)
    if (!out.length.count(name))
      parser.fail(0, "axis '" + name + "' is given a length (" + std::to_string(length) +
                         ") but does not appear on the left");
  (void)pattern;
  return out;
}

// The right side: its elementary axes in order and the final shape (one size per element).
struct Composed {
  std::vector<std::string> axes;
  Shape shape;
};

Composed compose(const PatternParser& parser, const Side& right, const Decomposed& left, bool reducing) {
  Composed out;
  for (const auto& element : right.elements) {
    std::int64_t size = 1;
    for (const auto& atom : element.atoms) {
      if (atom.anonymous > 0) {
        if (atom.anonymous != 1)
          parser.fail(atom.position, "anonymous axis of length " + std::to_string(atom.anonymous) +
                                         " on the right (only 1 is allowed: name the axis)");
        continue;
      }
      if (atom.ellipsis) {
        for (const auto& key : left.ellipsis_axes) {
          out.axes.push_back(key);
          if (element.group) size = checked_mul(size, left.length.at(key), "size of a merged dimension");
          else out.shape.push_back(left.length.at(key));
        }
        if (!element.group) size = -1;  // one size per ellipsis dimension, pushed above
        continue;
      }
      if (!left.length.count(atom.key))
        parser.fail(atom.position, "axis '" + atom.key + "' appears on the right but not on the left");
      out.axes.push_back(atom.key);
      size = checked_mul(size, left.length.at(atom.key), "size of a merged dimension");
    }
    if (size >= 0) out.shape.push_back(size);
  }
  if (!left.ellipsis_axes.empty() && !right.has_ellipsis && !reducing)
    parser.fail(right.begin, "'...' appears on the left but not on the right");
  return out;
}

}  // namespace

namespace {

// A rearrangement on paper: x (of `layout`) split into its axes, permuted into the right side's
// order (always a view), and the right side's shape.
struct Rearranged {
  Shape permuted_shape;
  Strides permuted_strides;
  std::vector<std::int64_t> permutation;
  Decomposed decomposed;
  Shape output_shape;
};

Rearranged rearranged(const PatternParser& parser, const Side& left, const Side& right, const Layout& layout,
                      const AxisLengths& lengths, std::string_view pattern) {
  if (right.has_ellipsis && !left.has_ellipsis) parser.fail(right.begin, "'...' appears on the right but not on the left");
  Rearranged out{.decomposed = decompose(parser, left, layout, lengths, pattern)};
  const Composed composed = compose(parser, right, out.decomposed, false);
  std::set<std::string> on_right(composed.axes.begin(), composed.axes.end());
  for (const auto& element : left.elements)
    for (const auto& atom : element.atoms) {
      if (atom.ellipsis || atom.anonymous == 1) continue;
      if (atom.anonymous > 1)
        parser.fail(atom.position, "anonymous axis of length " + std::to_string(atom.anonymous) +
                                       " cannot be rearranged (name it, or use reduce)");
      if (!on_right.count(atom.key))
        parser.fail(atom.position, "axis '" + atom.key + "' appears on the left but not on the right");
    }
  const auto& axes = out.decomposed.axes;
  for (const auto& key : composed.axes) {
    const auto a = static_cast<std::size_t>(std::find(axes.begin(), axes.end(), key) - axes.begin());
    out.permutation.push_back(static_cast<std::int64_t>(a));
    out.permuted_shape.push_back(out.decomposed.shape[a]);
    out.permuted_strides.push_back(out.decomposed.strides[a]);
  }
  out.output_shape = composed.shape;
  return out;
}

}  // namespace

RearrangeResult rearrange(const Tensor& x, std::string_view pattern, const AxisLengths& lengths) {
  const PatternParser parser("rearrange", pattern);
  const auto [left, right] = parser.sides();
  const Rearranged r = rearranged(parser, left, right, {x.shape(), x.strides()}, lengths, pattern);
  Tensor result = x.as_strided(r.decomposed.shape, r.decomposed.strides).permute(r.permutation).reshape(r.output_shape);
  return {result, result.same_storage(x)};
}

RearrangePlan rearrange_plan(std::string_view pattern, const AxisLengths& lengths) {
  const PatternParser parser("rearrange", pattern);
  const auto [left, right] = parser.sides();
  std::map<std::string, std::int64_t> given;
  for (const auto& [name, length] : lengths) {
    if (length <= 0) parser.fail(0, "axis '" + name + "' needs a positive length (got " + std::to_string(length) + ")");
    given[name] = length;
  }
  RearrangePlan plan;
  for (const auto& element : left.elements) {
    std::int64_t size = 1;
    for (const auto& atom : element.atoms) {
      if (atom.ellipsis) parser.fail(atom.position, "'...' has no length: name its axes");
      const auto it = given.find(atom.key);
      if (atom.anonymous == 0 && it == given.end())
        parser.fail(atom.position, "axis '" + atom.key + "' needs a length");
      size = checked_mul(size, atom.anonymous > 0 ? atom.anonymous : it->second, "input dimension");
    }
    plan.input_shape.push_back(size);
  }
  checked_numel(plan.input_shape, "element count of the input");
  plan.input_strides = contiguous_strides(plan.input_shape);
  const Rearranged r = rearranged(parser, left, right, {plan.input_shape, plan.input_strides}, lengths, pattern);
  plan.permuted_shape = r.permuted_shape;
  plan.permuted_strides = r.permuted_strides;
  plan.output_shape = r.output_shape;
  const auto view = compute_view_strides(r.permuted_shape, r.permuted_strides, r.output_shape);
  plan.is_view = view.has_value();
  plan.output_strides = view ? *view : contiguous_strides(r.output_shape);
  return plan;
}

Reduction parse_reduction(std::string_view name) {
  if (name == "sum") return Reduction::sum;
  if (name == "mean") return Reduction::mean;
  if (name == "max") return Reduction::max;
  if (name == "min") return Reduction::min;
  if (name == "prod") return Reduction::prod;
  throw std::invalid_argument("unknown reduction '" + std::string(name) + "' (expected sum, mean, max, min or prod)");
}

Tensor reduce(const Tensor& x, std::string_view pattern, std::string_view reduction, const AxisLengths& lengths) {
  return reduce(x, pattern, parse_reduction(reduction), lengths);
}

Tensor reduce(const Tensor& x, std::string_view pattern, Reduction reduction, const AxisLengths& lengths) {
  const PatternParser parser("reduce", pattern);
  const auto [left, right] = parser.sides();
  if (right.has_ellipsis && !left.has_ellipsis) parser.fail(right.begin, "'...' appears on the right but not on the left");
  const Tensor host = x.device().is_cpu() ? x : x.to(Device::cpu());
  const Decomposed decomposed = decompose(parser, left, {host.shape(), host.strides()}, lengths, pattern);
  const Composed composed = compose(parser, right, decomposed, true);
  // Kept axes first (in the right's order), reduced axes last (in the left's order).
  std::vector<std::int64_t> permutation;
  Shape kept_shape;
  for (const auto& key : composed.axes) {
    permutation.push_back(std::find(decomposed.axes.begin(), decomposed.axes.end(), key) - decomposed.axes.begin());
    kept_shape.push_back(decomposed.length.at(key));
  }
  std::int64_t reduced_count = 1;
  for (std::size_t a = 0; a < decomposed.axes.size(); ++a)
    if (std::find(composed.axes.begin(), composed.axes.end(), decomposed.axes[a]) == composed.axes.end()) {
      permutation.push_back(static_cast<std::int64_t>(a));
      reduced_count = checked_mul(reduced_count, decomposed.length.at(decomposed.axes[a]), "reduced element count");
    }
  if (reduced_count == 0 && (reduction == Reduction::max || reduction == Reduction::min))
    parser.fail(0, std::string(reduction == Reduction::max ? "max" : "min") + " of an empty set of elements (shape " +
                       shape_str(x.shape()) + ")");
  const Tensor permuted = host.as_strided(decomposed.shape, decomposed.strides).permute(permutation);
  if (counting()) {  // no matmul: PyTorch's counter counts nothing
    const std::int64_t results = shape_numel(kept_shape);
    const Cost cost = reduction == Reduction::mean ? mean_cost(x.numel(), results, x.dtype())
                                                   : reduction_cost(x.numel(), results, x.dtype());
    report({.op = "reduce", .module = {}, .pass = current_pass(), .shapes = {x.shape()}, .dtype = x.dtype(),
            .pytorch_flops = 0, .flops = cost.flops, .bytes = cost.bytes, .matmuls = {}});
  }
  std::vector<double> values(static_cast<std::size_t>(shape_numel(kept_shape)));
  const auto* base = static_cast<const std::byte*>(permuted.storage()->data());
  const auto size = static_cast<std::int64_t>(permuted.element_size());
  std::int64_t position = 0;  // row-major position in `permuted`: reduced axes are innermost
  const Tensor operands[] = {permuted};
  for (StridedIterator it = strided_iterator(operands); !it.done(); it.next(), ++position) {
    const double value = load_element(base + it.offset(0) * size, x.dtype());
    const auto out = static_cast<std::size_t>(position / reduced_count);
    double& acc = values[out];
    const bool first = position % reduced_count == 0;
    switch (reduction) {
      case Reduction::sum:
      case Reduction::mean: acc = first ? value : acc + value; break;
      case Reduction::prod: acc = first ? value : acc * value; break;
      case Reduction::max:  // NaN propagates, as in PyTorch
        if (first || (!std::isnan(acc) && (std::isnan(value) || value > acc))) acc = value;
        break;
      case Reduction::min:
        if (first || (!std::isnan(acc) && (std::isnan(value) || value < acc))) acc = value;
        break;
    }
  }
  if (reduced_count == 0)
    std::fill(values.begin(), values.end(),
              reduction == Reduction::prod ? 1.0 : reduction == Reduction::mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
  else if (reduction == Reduction::mean)
    for (auto& v : values) v /= static_cast<double>(reduced_count);
  Tensor result = from_values(values, kept_shape.empty() ? Shape{1} : kept_shape, {x.dtype(), Device::cpu()});
  return result.reshape(composed.shape).to(x.device());
}

// ---- einsum ----------------------------------------------------------------------------------

namespace {

struct Subscript {
  int axis = -1;  // index into the axis names; -1 for "..."
  std::size_t position = 0;
};

struct ParsedEinsum {
  EinsumForm form = EinsumForm::classic;
  std::vector<std::vector<Subscript>> inputs;
  std::vector<std::size_t> input_positions;  // where each operand's subscripts begin
  std::optional<std::vector<Subscript>> output;
  std::size_t output_position = 0;
  std::vector<std::string> names;  // axis index -> name
};

class EinsumParser {
 public:
  EinsumParser(std::string_view pattern) : pattern_(pattern) {}

  [[noreturn]] void fail(std::size_t position, const std::string& problem) const {
    throw PatternError("einsum", pattern_, position, problem);
  }

  ParsedEinsum parse(EinsumForm form) {
    const std::size_t arrow = pattern_.find("->");
    if (arrow != std::string_view::npos)
      if (const std::size_t second = pattern_.find("->", arrow + 2); second != std::string_view::npos)
        fail(second, "'->' appears more than once");
    const std::size_t lhs_end = arrow == std::string_view::npos ? pattern_.size() : arrow;
    std::vector<std::pair<std::size_t, std::size_t>> specs;  // [begin, end) of each operand
    std::size_t begin = 0;
    for (std::size_t i = 0; i <= lhs_end; ++i)
      if (i == lhs_end || pattern_[i] == ',') {
        specs.emplace_back(begin, i);
        begin = i + 1;
      }
    std::optional<std::pair<std::size_t, std::size_t>> rhs;
    if (arrow != std::string_view::npos) {
      rhs = std::make_pair(arrow + 2, pattern_.size());
      if (const std::size_t comma = pattern_.find(',', arrow + 2); comma != std::string_view::npos)
        fail(comma, "',' in the output");
    }
    if (form == EinsumForm::automatic) {
      form = EinsumForm::classic;
      auto named_like = [&](std::size_t b, std::size_t e) {
        int tokens = 0;
        bool in_token = false;
        for (std::size_t i = b; i < e; ++i) {
          const char c = pattern_[i];
          if (c == '_' || std::isdigit(static_cast<unsigned char>(c))) return true;
          if (is_space(c)) {
            in_token = false;
          } else if (!in_token) {
            in_token = true;
            ++tokens;
          }
        }
        return tokens >= 2;
      };
      for (const auto& [b, e] : specs)
        if (named_like(b, e)) form = EinsumForm::named;
      if (rhs && named_like(rhs->first, rhs->second)) form = EinsumForm::named;
    }
    ParsedEinsum parsed;
    parsed.form = form;
    for (const auto& [b, e] : specs) {
      parsed.inputs.push_back(parse_spec(b, e, form, false));
      parsed.input_positions.push_back(b);
    }
    if (rhs) {
      parsed.output = parse_spec(rhs->first, rhs->second, form, true);
      parsed.output_position = rhs->first;
    } else if (form == EinsumForm::named) {
      fail(pattern_.size(), "the named form needs '->' and the output axes");
    }
    parsed.names = names_;
    return parsed;
  }

 private:
  int axis_id(const std::string& name, std::size_t position, bool output) {
    auto it = std::find(names_.begin(), names_.end(), name);
    if (it != names_.end()) return static_cast<int>(it - names_.begin());
    if (output) fail(position, "output axis '" + name + "' does not appear in any operand");
    names_.push_back(name);
    return static_cast<int>(names_.size()) - 1;
  }

  std::vector<Subscript> parse_spec(std::size_t begin, std::size_t end, EinsumForm form, bool output) {
    std::vector<Subscript> subscripts;
    bool ellipsis = false;
    std::size_t i = begin;
    while (i < end) {
      const char c = pattern_[i];
      if (is_space(c)) {
        ++i;
        continue;
      }
      if (c == '.') {
        if (i + 3 > end || pattern_.substr(i, 3) != "...") fail(i, "'.' that is not part of '...'");
        if (ellipsis) fail(i, std::string("'...' appears more than once in ") + (output ? "the output" : "one operand"));
        ellipsis = true;
        subscripts.push_back({-1, i});
        i += 3;
        continue;
      }
      if (c == '(' || c == ')') fail(i, "parentheses are not allowed in einsum patterns");
      if (form == EinsumForm::classic) {
        if (!std::isalpha(static_cast<unsigned char>(c)))
          fail(i, std::string("invalid subscript '") + c + "' (classic subscripts are letters a-z, A-Z)");
        subscripts.push_back({axis_id(std::string(1, c), i, output), i});
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < end && !is_space(pattern_[j]) && pattern_[j] != '.') ++j;
      const std::string token(pattern_.substr(i, j - i));
      if (!std::all_of(token.begin(), token.end(), is_name_char) || std::isdigit(static_cast<unsigned char>(token[0])))
        fail(i, "invalid axis name '" + token + "' (names are letters, digits and '_', not starting with a digit)");
      subscripts.push_back({axis_id(token, i, output), i});
      i = j;
    }
    if (output) {
      std::set<int> seen;
      for (const auto& s : subscripts)
        if (s.axis >= 0 && !seen.insert(s.axis).second)
          fail(s.position, "output axis '" + names_[static_cast<std::size_t>(s.axis)] + "' appears more than once");
    }
    return subscripts;
  }

  std::string_view pattern_;
  std::vector<std::string> names_;
};

// The pattern resolved against shapes: every axis (named axes, then one per ellipsis dimension)
// with its size, which operand dimension carries which axis, and the output axes.
struct ResolvedEinsum {
  EinsumForm form;
  std::vector<std::string> names;                 // axis -> name
  std::vector<std::int64_t> sizes;                // axis -> size (after broadcasting)
  std::vector<std::vector<int>> operand_axes;     // operand -> dimension -> axis
  std::vector<int> output_axes;
};

ResolvedEinsum resolve(std::string_view pattern, std::span<const Shape> shapes, EinsumForm form) {
  EinsumParser parser(pattern);
  const ParsedEinsum parsed = parser.parse(form);
  if (parsed.inputs.size() != shapes.size())
    parser.fail(0, "the pattern names " + std::to_string(parsed.inputs.size()) + " operand" +
                       (parsed.inputs.size() == 1 ? "" : "s") + " but " + std::to_string(shapes.size()) + " were given");
  ResolvedEinsum r;
  r.form = parsed.form;
  r.names = parsed.names;
  const std::size_t named = parsed.names.size();
  // Ellipsis dimensions: as many as the widest operand's ellipsis covers, aligned right.
  std::size_t ellipsis_dims = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& subs = parsed.inputs[i];
    const bool has_ellipsis = std::any_of(subs.begin(), subs.end(), [](const Subscript& s) { return s.axis < 0; });
    const std::size_t labels = subs.size() - (has_ellipsis ? 1 : 0);
    if (has_ellipsis ? shapes[i].size() < labels : shapes[i].size() != labels)
      parser.fail(parsed.input_positions[i],
                  "operand " + std::to_string(i) + " has shape " + shape_str(shapes[i]) + " (" +
                      std::to_string(shapes[i].size()) + " dimensions) but its subscripts name " + std::to_string(labels) +
                      (has_ellipsis ? " or more" : ""));
    if (has_ellipsis) ellipsis_dims = std::max(ellipsis_dims, shapes[i].size() - labels);
  }
  for (std::size_t e = 0; e < ellipsis_dims; ++e) r.names.push_back(ellipsis_axis(e));
  r.sizes.assign(r.names.size(), 1);
  std::vector<int> size_source(r.names.size(), -1);  // operand that set the size
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::vector<int> axes;
    const auto& subs = parsed.inputs[i];
    const std::size_t covered = shapes[i].size() - (subs.size() - 1);  // if it has an ellipsis
    for (const auto& s : subs) {
      if (s.axis >= 0) {
        axes.push_back(s.axis);
      } else {
        for (std::size_t e = ellipsis_dims - covered; e < ellipsis_dims; ++e) axes.push_back(static_cast<int>(named + e));
      }
    }
    // Sizes: equal, or 1 (broadcast), as torch.einsum; a repeated axis in one operand must match.
    std::map<int, std::size_t> first_dim;
    for (std::size_t d = 0; d < axes.size(); ++d) {
      const int axis = axes[d];
      const std::int64_t size = shapes[i][d];
      std::size_t position = parsed.input_positions[i];
      for (const auto& s : subs)
        if (s.axis == axis) position = s.position;
      if (auto it = first_dim.find(axis); it != first_dim.end()) {
        if (shapes[i][it->second] != size)
          parser.fail(position, "axis '" + r.names[static_cast<std::size_t>(axis)] + "'" +
                                    " is repeated in operand " + std::to_string(i) + " but its sizes differ (" +
                                    std::to_string(shapes[i][it->second]) + " != " + std::to_string(size) + ")");
        continue;
      }
      first_dim[axis] = d;
      if (size == 1) continue;
      auto& known = r.sizes[static_cast<std::size_t>(axis)];
      if (known != 1 && known != size)
        parser.fail(position, "axis '" + r.names[static_cast<std::size_t>(axis)] + "' has size " + std::to_string(size) +
                                  " in operand " + std::to_string(i) + " (shape " + shape_str(shapes[i]) + ") but " +
                                  std::to_string(known) + " in operand " +
                                  std::to_string(size_source[static_cast<std::size_t>(axis)]) + " (shape " +
                                  shape_str(shapes[static_cast<std::size_t>(size_source[static_cast<std::size_t>(axis)])]) + ")");
      known = size;
      size_source[static_cast<std::size_t>(axis)] = static_cast<int>(i);
    }
    r.operand_axes.push_back(std::move(axes));
  }
  if (parsed.output) {
    for (const auto& s : *parsed.output) {
      if (s.axis >= 0) {
        r.output_axes.push_back(s.axis);
      } else {
        for (std::size_t e = 0; e < ellipsis_dims; ++e) r.output_axes.push_back(static_cast<int>(named + e));
      }
    }
  } else {
    // Implicit output: the ellipsis, then the axes used once, in A-Z a-z order (torch.einsum).
    for (std::size_t e = 0; e < ellipsis_dims; ++e) r.output_axes.push_back(static_cast<int>(named + e));
    std::vector<int> once;
    for (std::size_t axis = 0; axis < named; ++axis) {
      int count = 0;
      for (const auto& subs : parsed.inputs)
        for (const auto& s : subs) count += s.axis == static_cast<int>(axis);
      if (count == 1) once.push_back(static_cast<int>(axis));
    }
    std::sort(once.begin(), once.end(), [&](int a, int b) {
      const char x = r.names[static_cast<std::size_t>(a)][0], y = r.names[static_cast<std::size_t>(b)][0];
      const bool upper_x = std::isupper(static_cast<unsigned char>(x)) != 0, upper_y = std::isupper(static_cast<unsigned char>(y)) != 0;
      return upper_x != upper_y ? upper_x : x < y;
    });
    r.output_axes.insert(r.output_axes.end(), once.begin(), once.end());
  }
  return r;
}

// ---- the FLOP plan (Note [einsum FLOPs]) ----

struct PlanOperand {
  std::string label;     // "x0", "(x0 x1)"
  std::vector<int> axes; // axes of size != 1 it still carries, in first-seen order
  bool has(int axis) const { return std::find(axes.begin(), axes.end(), axis) != axes.end(); }
};

struct PlanState {
  std::vector<PlanOperand> operands;
  std::vector<int> counts;  // axis -> operands that carry it (size != 1)
  std::vector<EinsumStep> steps;
  std::int64_t flops = 0;
  std::int64_t elementwise_flops = 0;  // summed as the steps come: an order whose total overflows is no plan
};

class Planner {
 public:
  explicit Planner(const ResolvedEinsum& r) : r_(r) {
    in_output_.assign(r.names.size(), false);
    for (int axis : r.output_axes) in_output_[static_cast<std::size_t>(axis)] = true;
  }

  PlanState initial() const {
    PlanState state;
    state.counts.assign(r_.names.size(), 0);
    for (std::size_t i = 0; i < r_.operand_axes.size(); ++i) {
      PlanOperand op{"x" + std::to_string(i), {}};
      for (std::size_t d = 0; d < r_.operand_axes[i].size(); ++d) {
        const int axis = r_.operand_axes[i][d];
        if (r_.sizes[static_cast<std::size_t>(axis)] == 1 || op.has(axis)) continue;
        op.axes.push_back(axis);
      }
      for (int axis : op.axes) ++state.counts[static_cast<std::size_t>(axis)];
      state.operands.push_back(std::move(op));
    }
    return state;
  }

  // Contracts operands i < j of `state` (torch.einsum's loop body and sumproduct_pair).
  void contract(PlanState& state, std::size_t i, std::size_t j, bool result_first) const {
    PlanOperand a = state.operands[i], b = state.operands[j];
    state.operands.erase(state.operands.begin() + static_cast<std::ptrdiff_t>(j));
    state.operands.erase(state.operands.begin() + static_cast<std::ptrdiff_t>(i));
    std::vector<int> sum_axes, a_sum, b_sum;
    for (std::size_t axis = 0; axis < r_.names.size(); ++axis) {
      if (in_output_[axis]) continue;
      const int ax = static_cast<int>(axis);
      auto& count = state.counts[axis];
      if (a.has(ax) && b.has(ax)) {
        if (--count == 1) {
          sum_axes.push_back(ax);
          count = 0;
        }
      } else if (count == 1) {
        if (a.has(ax)) {
          a_sum.push_back(ax);
          count = 0;
        } else if (b.has(ax)) {
          b_sum.push_back(ax);
          count = 0;
        }
      }
    }
    presum(state, a, a_sum);
    presum(state, b, b_sum);
    PlanOperand result{"(" + a.label + " " + b.label + ")", {}};
    EinsumStep step;
    step.left = describe(a);
    step.right = describe(b);
    if (sum_axes.empty()) {
      result.axes = a.axes;
      for (int axis : b.axes)
        if (!result.has(axis)) result.axes.push_back(axis);
      step.kind = "mul";
      step.elementwise_flops = numel(result);
    } else {
      step.kind = "bmm";
      Shape batch, m, k, n;  // the sizes in each role
      for (int axis : a.axes) {
        if (std::find(sum_axes.begin(), sum_axes.end(), axis) != sum_axes.end()) continue;
        (b.has(axis) ? step.batch_axes : step.m_axes).push_back(r_.names[static_cast<std::size_t>(axis)]);
        (b.has(axis) ? batch : m).push_back(size(axis));
        result.axes.push_back(axis);
      }
      for (int axis : sum_axes) {
        step.k_axes.push_back(r_.names[static_cast<std::size_t>(axis)]);
        k.push_back(size(axis));
      }
      for (int axis : b.axes) {
        if (a.has(axis) || std::find(sum_axes.begin(), sum_axes.end(), axis) != sum_axes.end()) continue;
        step.n_axes.push_back(r_.names[static_cast<std::size_t>(axis)]);
        n.push_back(size(axis));
        result.axes.push_back(axis);
      }
      step.batch = checked_numel(batch, "bmm batch size");
      step.m = checked_numel(m, "bmm m");
      step.k = checked_numel(k, "bmm k");
      step.n = checked_numel(n, "bmm n");
      // checked_numel: a zero size makes it 0 whatever the others, in every contraction order.
      step.flops = checked_numel(std::vector<std::int64_t>{2, step.batch, step.m, step.k, step.n}, "bmm FLOPs");
    }
    step.result = describe(result);
    state.flops = checked_add(state.flops, step.flops, "einsum FLOPs");
    state.elementwise_flops = checked_add(state.elementwise_flops, step.elementwise_flops, "einsum elementwise FLOPs");
    state.steps.push_back(std::move(step));
    if (result_first) state.operands.insert(state.operands.begin(), std::move(result));
    else state.operands.push_back(std::move(result));
  }

  // The last operand: sum what the output does not keep.
  void finish(PlanState& state) const {
    if (state.operands.size() != 1) return;
    PlanOperand& op = state.operands[0];
    std::vector<int> rest;
    for (int axis : op.axes)
      if (!in_output_[static_cast<std::size_t>(axis)]) rest.push_back(axis);
    presum(state, op, rest);
  }

 private:
  std::int64_t size(int axis) const { return r_.sizes[static_cast<std::size_t>(axis)]; }

  std::int64_t numel(const PlanOperand& op) const {
    Shape sizes;
    for (int axis : op.axes) sizes.push_back(size(axis));
    return checked_numel(sizes, "element count of " + op.label);
  }

  std::string describe(const PlanOperand& op) const {
    std::vector<std::string> names;
    for (int axis : op.axes) names.push_back(r_.names[static_cast<std::size_t>(axis)]);
    return op.label + "[" + join(names) + "]";
  }

  void presum(PlanState& state, PlanOperand& op, const std::vector<int>& axes) const {
    if (axes.empty()) return;
    EinsumStep step;
    step.kind = "sum";
    step.left = describe(op);
    const std::int64_t before = numel(op);
    std::erase_if(op.axes, [&](int axis) { return std::find(axes.begin(), axes.end(), axis) != axes.end(); });
    step.result = describe(op);
    // Summing n elements into m outputs takes n - m additions; an empty operand (n = 0) takes none
    // (its one output when every axis is summed is a zero, not -1 additions).
    step.elementwise_flops = before == 0 ? 0 : before - numel(op);
    state.elementwise_flops = checked_add(state.elementwise_flops, step.elementwise_flops, "einsum elementwise FLOPs");
    state.steps.push_back(std::move(step));
  }

  const ResolvedEinsum& r_;
  std::vector<bool> in_output_;
};

// Every pairwise order; one whose counts overflow on the way is no candidate (`overflow` keeps
// the first such error, for when no order fits).
void search_optimal(const Planner& planner, const PlanState& state, std::optional<PlanState>& best,
                    std::optional<SizeOverflow>& overflow) {
  if (state.operands.size() <= 1) {
    PlanState done = state;
    try {
      planner.finish(done);
    } catch (const SizeOverflow& error) {
      if (!overflow) overflow = error;
      return;
    }
    if (!best || done.flops < best->flops) best = std::move(done);
    return;
  }
  for (std::size_t i = 0; i < state.operands.size(); ++i)
    for (std::size_t j = i + 1; j < state.operands.size(); ++j) {
      PlanState next = state;
      try {
        planner.contract(next, i, j, false);
      } catch (const SizeOverflow& error) {
        if (!overflow) overflow = error;
        continue;
      }
      search_optimal(planner, next, best, overflow);
    }
}

}  // namespace

namespace {

// What torch.einsum reports to its flop counter: the plan's bmm steps (Note [einsum FLOPs]); the
// full count adds its sum and mul steps.
void report_einsum(const EinsumPlan& plan, std::span<const Shape> shapes, DType dtype) {
  std::vector<MatmulShape> matmuls;
  for (const auto& step : plan.steps)
    if (step.kind == "bmm")
      matmuls.push_back({.name = "einsum", .role = MatmulRole::forward, .layout = MatmulLayout::NN,
                         .batch = step.batch, .m = step.m, .n = step.n, .k = step.k});
  report({.op = "einsum", .module = {}, .pass = current_pass(), .shapes = {shapes.begin(), shapes.end()},
          .dtype = dtype, .pytorch_flops = plan.flops,
          .flops = checked_add(plan.flops, plan.elementwise_flops, "einsum FLOPs"),
          .bytes = read_once_bytes(shapes, plan.output_shape, dtype), .matmuls = std::move(matmuls)});
}

}  // namespace

EinsumPlan einsum_plan(std::string_view pattern, std::span<const Shape> shapes, EinsumOrder order, EinsumForm form) {
  const ResolvedEinsum r = resolve(pattern, shapes, form);
  // Operands and an output that could not exist (more than 2^63 elements) have no plan.
  for (const auto& shape : shapes) checked_numel(shape, "element count of an operand");
  const Planner planner(r);
  PlanState state = planner.initial();
  if (order == EinsumOrder::optimal && state.operands.size() > 2) {
    if (state.operands.size() > 6)
      throw PatternError("einsum", pattern, 0, "the optimal order is searched exhaustively for at most 6 operands");
    std::optional<PlanState> best;
    std::optional<SizeOverflow> overflow;
    search_optimal(planner, state, best, overflow);
    if (!best) throw *overflow;
    state = std::move(*best);
  } else {
    while (state.operands.size() > 1) planner.contract(state, 0, 1, true);
    planner.finish(state);
  }
  EinsumPlan plan;
  plan.form = r.form;
  plan.order = order;
  for (const auto& axes : r.operand_axes) {
    std::vector<std::string> names;
    for (int axis : axes) names.push_back(r.names[static_cast<std::size_t>(axis)]);
    plan.input_axes.push_back(std::move(names));
  }
  for (int axis : r.output_axes) {
    plan.output_axes.push_back(r.names[static_cast<std::size_t>(axis)]);
    plan.output_shape.push_back(r.sizes[static_cast<std::size_t>(axis)]);
  }
  checked_numel(plan.output_shape, "element count of the output");
  plan.flops = state.flops;
  plan.elementwise_flops = state.elementwise_flops;
  plan.steps = std::move(state.steps);
  return plan;
}

EinsumFormula einsum_formula(std::string_view pattern, EinsumForm form) {
  EinsumParser parser(pattern);
  const ParsedEinsum parsed = parser.parse(form);
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < parsed.inputs.size(); ++i) {
    for (const Subscript& subscript : parsed.inputs[i])
      if (subscript.axis < 0)
        throw PatternError("einsum", pattern, subscript.position, "'...' has no formula: give --shapes");
    shapes.push_back(Shape(parsed.inputs[i].size(), 2));
  }
  const EinsumPlan plan = einsum_plan(pattern, shapes, EinsumOrder::left_to_right, parsed.form);
  EinsumFormula out{.form = plan.form, .input_axes = plan.input_axes, .output_axes = plan.output_axes};
  for (const EinsumStep& step : plan.steps) {
    if (step.kind != "bmm") continue;
    std::vector<std::string> axes;
    for (const auto* role : {&step.batch_axes, &step.m_axes, &step.k_axes, &step.n_axes})
      axes.insert(axes.end(), role->begin(), role->end());
    out.flops += (out.flops.empty() ? "2*" : " + 2*") + join(axes, "*");
    out.terms.push_back(std::move(axes));
  }
  if (out.flops.empty()) out.flops = "0";
  return out;
}

Tensor einsum(std::string_view pattern, std::span<const Tensor> operands, EinsumForm form) {
  std::vector<Shape> shapes;
  for (const auto& t : operands) shapes.push_back(t.shape());
  const ResolvedEinsum r = resolve(pattern, shapes, form);
  for (const auto& t : operands)
    if (t.dtype() != operands[0].dtype())
      throw PatternError("einsum", pattern, 0, "operands have different dtypes (" + std::string(dtype_name(operands[0].dtype())) +
                                                   " and " + std::string(dtype_name(t.dtype())) + "): convert first");
  if (counting()) report_einsum(einsum_plan(pattern, shapes, EinsumOrder::left_to_right, form), shapes,
                                operands.empty() ? DType::f32 : operands[0].dtype());
  // One walk over the space of every axis: output axes first, then the contracted ones.
  std::vector<int> order = r.output_axes;
  for (std::size_t axis = 0; axis < r.names.size(); ++axis)
    if (std::find(order.begin(), order.end(), static_cast<int>(axis)) == order.end()) order.push_back(static_cast<int>(axis));
  std::vector<std::size_t> slot(r.names.size());  // axis -> position in `order`
  for (std::size_t p = 0; p < order.size(); ++p) slot[static_cast<std::size_t>(order[p])] = p;
  Shape space;
  for (int axis : order) space.push_back(r.sizes[static_cast<std::size_t>(axis)]);
  Shape out_shape;
  for (int axis : r.output_axes) out_shape.push_back(r.sizes[static_cast<std::size_t>(axis)]);
  Tensor accumulator = zeros(out_shape, {DType::f64, Device::cpu()});
  std::vector<Tensor> hosts;
  std::vector<Strides> strides;
  std::vector<std::int64_t> offsets;
  Strides out_strides(order.size(), 0);
  for (std::size_t p = 0; p < r.output_axes.size(); ++p) out_strides[p] = accumulator.strides()[p];
  strides.push_back(out_strides);
  offsets.push_back(0);
  for (std::size_t i = 0; i < operands.size(); ++i) {
    hosts.push_back(operands[i].device().is_cpu() ? operands[i] : operands[i].to(Device::cpu()));
    Strides s(order.size(), 0);
    for (std::size_t d = 0; d < r.operand_axes[i].size(); ++d) {
      if (hosts[i].shape()[d] == 1) continue;  // broadcast: stays at index 0
      s[slot[static_cast<std::size_t>(r.operand_axes[i][d])]] += hosts[i].strides()[d];  // a repeated axis: the diagonal
    }
    strides.push_back(std::move(s));
    offsets.push_back(hosts[i].storage_offset());
  }
  auto* acc = static_cast<double*>(accumulator.storage()->data());
  for (StridedIterator it(space, strides, offsets); !it.done(); it.next()) {
    double product = 1;
    for (std::size_t i = 0; i < hosts.size(); ++i)
      product *= load_element(static_cast<const std::byte*>(hosts[i].storage()->data()) +
                                  it.offset(i + 1) * static_cast<std::int64_t>(hosts[i].element_size()),
                              hosts[i].dtype());
    acc[it.offset(0)] += product;
  }
  const DType dtype = operands.empty() ? DType::f32 : operands[0].dtype();
  return accumulator.to(dtype).to(operands.empty() ? Device::cpu() : operands[0].device());
}

Tensor einsum(const Tensor& x, std::string_view pattern) {
  const Tensor operands[] = {x};
  return einsum(pattern, operands);
}

Tensor einsum(const Tensor& x, const Tensor& y, std::string_view pattern) {
  const Tensor operands[] = {x, y};
  return einsum(pattern, operands);
}

Tensor einsum(const Tensor& x, const Tensor& y, const Tensor& z, std::string_view pattern) {
  const Tensor operands[] = {x, y, z};
  return einsum(pattern, operands);
}

}  // namespace flopscope
