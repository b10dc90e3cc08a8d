// Shared by the commands: reading options, numbers and shapes, writing values in their shortest
// exact form.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "flopscope/dtype.hpp"
#include "flopscope/numerics.hpp"
#include "flopscope/shape.hpp"
#include "flopscope/sizes.hpp"

namespace flopscope::cli {

// Walks `--name value`, `--name=value` and `--flag` options; anything else is a positional.
class OptionReader {
 public:
  explicit OptionReader(const Args& args) : args_(args) {}
  bool done() const { return index_ >= args_.size(); }
  // The current argument's option name ("--to") or "" for a positional.
  std::string_view name() {
    std::string_view arg = args_[index_];
    if (!arg.starts_with("--")) return {};
    auto eq = arg.find('=');
    return eq == std::string_view::npos ? arg : arg.substr(0, eq);
  }
  std::string take_flag() {
    std::string_view arg = args_[index_];
    if (arg.find('=') != std::string_view::npos)
      throw UsageError{"option '" + std::string(name()) + "' takes no value"};
    ++index_;
    return std::string(arg);
  }
  std::string take_value() {
    std::string_view arg = args_[index_];
    const std::string option(name());
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      ++index_;
      return std::string(arg.substr(eq + 1));
    }
    if (index_ + 1 >= args_.size()) throw UsageError{"option '" + option + "' needs a value"};
    index_ += 2;
    return args_[index_ - 1];
  }
  std::string take_positional() { return args_[index_++]; }
  [[noreturn]] void unknown() { throw UsageError{"unknown option '" + std::string(name()) + "'"}; }

 private:
  const Args& args_;
  std::size_t index_ = 0;
};

// A shape as --shapes takes it: parse_shape's "2x3x4", or "scalar" / "()" for a 0-d operand.
std::optional<Shape> parse_shape_argument(std::string_view text);

// A count as parse_count reads it ("8", "1Ki", "2^10"), positive; UsageError naming the option.
inline std::int64_t positive_count(const std::string& option, const std::string& text) {
  auto value = parse_count(text);
  if (!value || *value <= 0) throw UsageError{option + ": expected a positive count (got '" + text + "')"};
  return *value;
}

// A count as parse_count reads it, a decimal such as 1.5e12, or a decimal with K, M, B (or G), T
// ("70B", "15T", "1.5T"), times `unit`: an exact non-negative int64; UsageError naming the option
// and the text otherwise (account_numbers.cpp).
std::int64_t exact_count(const std::string& option, const std::string& text, std::int64_t unit = 1);
std::int64_t positive_exact_count(const std::string& option, const std::string& text);

// A dtype by its name or an alias (PyTorch's and ml_dtypes' spellings); "fp8" names two formats and
// is answered with the question which.
inline DType dtype_option(const std::string& text) {
  auto dtype = parse_dtype(text);
  if (!dtype && is_ambiguous_fp8(text))
    throw UsageError{"'" + text + "' is two formats: f8e4m3 (float8_e4m3fn: 3 mantissa bits, max 448) or f8e5m2 "
                     "(float8_e5m2: 2 mantissa bits, max 57344)? Name one"};
  if (!dtype) throw UsageError{"unknown dtype '" + text + "' (known: " + dtype_list() + ")"};
  return *dtype;
}

// How a decimal became the double that parse_number returns.
enum class DecimalRead {
  exact,      // the decimal is that double (also: 0x... bit patterns, inf, nan)
  rounded,    // the nearest double differs from the decimal ("0.1", "1e-8")
  overflow,   // beyond the largest double ("1e400"): read as +/-inf
  underflow,  // below half the smallest subnormal double ("1e-400"): read as +/-0
};

struct Number {
  double value = 0;
  DecimalRead read = DecimalRead::exact;
};

// A number as people and programs write it: a decimal ("1e-8", "-0", "inf", "nan", "+3"), read
// as the nearest double, or an f32 bit pattern ("0x3f800000", 1 to 8 hex digits). nullopt otherwise.
std::optional<Number> parse_number(std::string_view text);

// What `number` becomes in `dtype` (convert_value), said of the decimal as written: a decimal
// beyond f64's range overflows or underflows in every dtype, and one that the double already
// rounded is not stored exactly in any.
Conversion convert_number(DType dtype, const Number& number, bool saturate);

// `text` without leading blanks (space, tab) and trailing ones (space, tab, '\r'): a line as
// `flopscope convert` reads it.
std::string_view trim_blanks(std::string_view text);

// One line of `flopscope convert`: "<text>\t<bits>\t<value>\t<what happened>\n" appended to
// `out`; false (and nothing appended) when `text` is not a number.
bool append_conversion(std::string& out, std::string_view text, DType dtype, bool saturate);

// Shortest decimal that reads back as the same value: in f32 for every dtype but f64.
inline std::string shortest(double value, DType dtype) {
  char buffer[64];
  auto result = dtype == DType::f64 ? std::to_chars(buffer, buffer + sizeof buffer, value)
                                    : std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value));
  return std::string(buffer, result.ptr);
}

inline std::string hex_bits(std::uint64_t bits, DType dtype) {
  static constexpr char digits[] = "0123456789abcdef";
  const std::size_t width = 2 * dtype_size(dtype);
  std::string out = "0x";
  for (std::size_t i = width; i-- > 0;) out += digits[(bits >> (4 * i)) & 15];
  return out;
}

}  // namespace flopscope::cli
