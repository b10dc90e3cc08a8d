// Shared by the numerics commands (dtypes, convert, memory): reading options and numbers,
// writing values in their shortest exact form.
#pragma once

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "flopscope/dtype.hpp"
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

// A count as parse_count reads it ("8", "1Ki", "2^10"), positive; UsageError naming the option.
inline std::int64_t positive_count(const std::string& option, const std::string& text) {
  auto value = parse_count(text);
  if (!value || *value <= 0) throw UsageError{option + ": expected a positive count (got '" + text + "')"};
  return *value;
}

inline DType dtype_option(const std::string& text) {
  auto dtype = parse_dtype(text);
  if (!dtype) throw UsageError{"unknown dtype '" + text + "' (known: " + dtype_list() + ")"};
  return *dtype;
}

// A number as people and programs write it: a decimal ("1e-8", "-0", "inf", "nan", "+3"), read
// as a double, or an f32 bit pattern ("0x3f800000", 1 to 8 hex digits). nullopt otherwise.
inline std::optional<double> parse_number(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    std::uint32_t bits = 0;
    const char* first = text.data() + 2;
    const char* last = text.data() + text.size();
    if (last - first > 8) return std::nullopt;
    auto [ptr, ec] = std::from_chars(first, last, bits, 16);
    if (ec != std::errc{} || ptr != last) return std::nullopt;
    return static_cast<double>(std::bit_cast<float>(bits));
  }
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+' || text[0] == ' ') return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // Out of range ("1e999") is a number: it overflows to inf, like any conversion.
  if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size()) {
    bool negative = text[0] == '-';
    std::size_t e = text.find_first_of("eE");
    bool tiny = e != std::string_view::npos && e + 1 < text.size() && text[e + 1] == '-';
    return tiny ? (negative ? -0.0 : 0.0) : (negative ? -HUGE_VAL : HUGE_VAL);
  }
  if (ec != std::errc{} || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

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
