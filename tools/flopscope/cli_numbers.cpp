#include "cli_numbers.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "flopscope/memory.hpp"

namespace flopscope::cli {

namespace {

// A decimal as its significant digits (no leading or trailing zeros; empty for zero) and the
// exponent E with |value| = 0.<digits> x 10^E. `text` is a decimal as from_chars accepts it:
// [-+]digits[.digits][(e|E)[-+]digits], or as printf's %e and %f write it.
struct Decimal {
  std::string digits;
  std::int64_t exponent = 0;
  friend bool operator==(const Decimal&, const Decimal&) = default;
};

Decimal decimal_of(std::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  std::int64_t exponent = 0;
  if (const std::size_t e = text.find_first_of("eE"); e != std::string_view::npos) {
    std::string_view written = text.substr(e + 1);
    const bool negative = !written.empty() && written[0] == '-';
    if (!written.empty() && (written[0] == '-' || written[0] == '+')) written.remove_prefix(1);
    // Saturates far beyond any double's exponent (and any digit count a line can have).
    for (char c : written) exponent = std::min<std::int64_t>(exponent * 10 + (c - '0'), std::int64_t{1} << 50);
    if (negative) exponent = -exponent;
    text = text.substr(0, e);
  }
  const std::size_t point = text.find('.');
  Decimal out;
  out.exponent = static_cast<std::int64_t>(point == std::string_view::npos ? text.size() : point) + exponent;
  for (char c : text) {
    if (c == '.') continue;
    if (out.digits.empty() && c == '0') {
      --out.exponent;  // a leading zero
      continue;
    }
    out.digits += c;
  }
  while (!out.digits.empty() && out.digits.back() == '0') out.digits.pop_back();
  if (out.digits.empty()) out.exponent = 0;
  return out;
}

// Whether the decimal `text` is exactly the finite, nonzero double `value` it was read as.
bool decimal_is_exact(std::string_view text, double value) {
  const Decimal decimal = decimal_of(text);
  const auto digits = static_cast<std::int64_t>(decimal.digits.size());
  // value = m x 2^q with m odd. For q < 0 its decimal expansion has exactly -q digits after the
  // point (m x 5^-q / 10^-q, the last digit odd); for q >= 0 it is an integer. Most decimals
  // fail this count at once; the others are compared digit by digit with printf's exact expansion.
  int binary_exponent = 0;
  const double fraction = std::frexp(std::fabs(value), &binary_exponent);
  const auto mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
  const std::int64_t q = binary_exponent - 53 + std::countr_zero(mantissa);
  const std::int64_t after_point = digits - decimal.exponent;
  if (q < 0 ? after_point != -q : after_point > 0) return false;
  if (digits > 800) return false;  // no double has more than 767 significant digits
  std::string printed(static_cast<std::size_t>(digits) + 400, '\0');  // %.0f of a double: at most 309 digits
  const int length = q < 0 ? std::snprintf(printed.data(), printed.size(), "%.*e", int(digits - 1), std::fabs(value))
                           : std::snprintf(printed.data(), printed.size(), "%.0f", std::fabs(value));
  printed.resize(static_cast<std::size_t>(std::max(length, 0)));
  return decimal_of(printed) == decimal;
}

}  // namespace

std::optional<Number> parse_number(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    std::uint32_t bits = 0;
    const char* first = text.data() + 2;
    const char* last = text.data() + text.size();
    if (last - first > 8) return std::nullopt;
    auto [ptr, ec] = std::from_chars(first, last, bits, 16);
    if (ec != std::errc{} || ptr != last) return std::nullopt;
    const float f32 = std::bit_cast<float>(bits);
    // A NaN's payload is dropped, as by every conversion (Note [NaN encoding]); the cast to
    // double would keep it, and --to f64 would show it.
    const double value = std::isnan(f32) ? std::copysign(std::numeric_limits<double>::quiet_NaN(), f32) : f32;
    return Number{value, DecimalRead::exact};
  }
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+' || text[0] == ' ') return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ptr != text.data() + text.size()) return std::nullopt;
  const bool negative = text[0] == '-';
  // Out of range ("1e400", "1e-400", "0.<400 zeros>1") is a number beyond every dtype's range.
  if (ec == std::errc::result_out_of_range) {
    if (decimal_of(text).exponent > 0) return Number{negative ? -HUGE_VAL : HUGE_VAL, DecimalRead::overflow};
    return Number{negative ? -0.0 : 0.0, DecimalRead::underflow};
  }
  if (ec != std::errc{}) return std::nullopt;
  // Zero is read as zero only from a zero decimal (anything else that small is out of range).
  if (!std::isfinite(value) || value == 0) return Number{value, DecimalRead::exact};
  return Number{value, decimal_is_exact(text, value) ? DecimalRead::exact : DecimalRead::rounded};
}

Conversion convert_number(DType dtype, const Number& number, bool saturate) {
  Conversion c = convert_value(dtype, number.value, saturate);
  if (c.flag != ConversionFlag::exact) return c;  // overflow, saturation, NaN, rounding: already said
  switch (number.read) {
    case DecimalRead::exact: break;
    case DecimalRead::rounded: c.flag = ConversionFlag::rounded; break;
    case DecimalRead::overflow: c.flag = ConversionFlag::overflow_to_inf; break;  // inf stayed inf
    case DecimalRead::underflow: c.flag = ConversionFlag::underflow_to_zero; break;
  }
  return c;
}

std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

std::optional<Shape> parse_shape_argument(std::string_view text) {
  if (text == "scalar" || text == "()") return Shape{};
  if (text.empty()) return std::nullopt;  // parse_shape reads "" as 0-d: here it is a missing shape
  return parse_shape(text);
}

bool append_conversion(std::string& out, std::string_view text, DType dtype, bool saturate) {
  const auto number = parse_number(text);
  if (!number) return false;
  const Conversion c = convert_number(dtype, *number, saturate);
  out.append(text);
  out += '\t';
  out += hex_bits(c.bits, dtype);
  out += '\t';
  out += shortest(c.value, dtype);
  out += '\t';
  out += conversion_flag_name(c.flag);
  out += '\n';
  return true;
}

}  // namespace flopscope::cli
