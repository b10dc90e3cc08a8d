// flopscope account: exact numbers in text and JSON, and the options that read counts, fractions,
// times and memory sizes (account.hpp).

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "account.hpp"
#include "cli_numbers.hpp"
#include "commands.hpp"
#include "flopscope/accounting.hpp"
#include "flopscope/compute_mode.hpp"
#include "flopscope/memory.hpp"
#include "flopscope/model.hpp"
#include "flopscope/sizes.hpp"
#include "flopscope/training.hpp"

namespace flopscope::cli {

using nlohmann::json;

// ---- exact numbers ----

std::string exact_and_short(Count128 value) {
  if (value < 10000 && value > -10000) return count_str(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2e", static_cast<double>(value));
  std::string text = buffer;  // "6.30e+24" -> "6.30e24"
  if (const auto e = text.find("e+"); e != std::string::npos) text.erase(e + 1, 1);
  return format_thousands128(value) + " (" + text + ")";
}

namespace {

// Note [exact JSON counts]: nlohmann::json holds 64-bit integers only. A larger count goes into
// the tree as a string with this prefix, and dump_exact writes it back without the quotes.
constexpr std::string_view kCountMarker = "\x01" "count:";

}  // namespace

json json_count(Count128 value) {
  if (value >= std::numeric_limits<std::int64_t>::min() && value <= std::numeric_limits<std::int64_t>::max())
    return static_cast<std::int64_t>(value);
  return std::string(kCountMarker) + count_str(value);
}

std::string dump_exact(const json& value) {
  std::string text = value.dump(2);
  // The marker dumps as "\u0001count:" inside the quotes.
  const std::string open = "\"\\u0001count:";
  for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const std::size_t close = text.find('"', at + open.size());
    text = text.substr(0, at) + text.substr(at + open.size(), close - at - open.size()) + text.substr(close + 1);
  }
  return text;
}

namespace {

// value = mantissa x 10^exponent, from "15e12", "1.5e9", "0.35", "70".
struct Decimal {
  Count128 mantissa = 0;
  int exponent = 0;
};

std::optional<Decimal> parse_decimal(std::string_view text) {
  Decimal out;
  std::size_t i = 0, digits = 0;
  auto digit = [&](char c) { return c >= '0' && c <= '9'; };
  auto take_digit = [&](char c) {
    if (__builtin_mul_overflow(out.mantissa, Count128{10}, &out.mantissa) ||
        __builtin_add_overflow(out.mantissa, Count128{c - '0'}, &out.mantissa))
      return false;
    ++digits;
    return true;
  };
  for (; i < text.size() && digit(text[i]); ++i)
    if (!take_digit(text[i])) return std::nullopt;
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && digit(text[i]); ++i) {
      if (!take_digit(text[i])) return std::nullopt;
      --out.exponent;
    }
  if (digits == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    int exponent = 0;
    const std::size_t start = i;
    for (; i < text.size() && digit(text[i]) && exponent < 10000; ++i) exponent = exponent * 10 + (text[i] - '0');
    if (i == start) return std::nullopt;
    out.exponent += negative ? -exponent : exponent;
  }
  if (i != text.size()) return std::nullopt;
  return out;
}

}  // namespace

// `text` (a count as parse_count reads it, or a decimal such as 1.5e12) times `unit`, as an exact
// non-negative int64; UsageError naming the option and the text otherwise.
std::int64_t exact_count(const std::string& option, const std::string& text, std::int64_t unit) {
  if (text.starts_with('-')) throw UsageError{option + ": negative value '" + text + "'"};
  Count128 value = 0;
  const std::string overflow = option + ": '" + text + "' overflows a 64-bit count";
  // "70B", "15T", "1.5T", "2.5M": a decimal times a thousand, million, billion (B or G), trillion.
  static const std::pair<char, std::int64_t> suffixes[] = {
      {'K', 1'000}, {'M', 1'000'000}, {'B', 1'000'000'000}, {'G', 1'000'000'000}, {'T', 1'000'000'000'000}};
  for (const auto& [letter, scale] : suffixes)
    if (text.size() > 1 && text.back() == letter && parse_decimal(text.substr(0, text.size() - 1))) {
      Count128 scaled = 0;
      if (__builtin_mul_overflow(Count128{unit}, Count128{scale}, &scaled) ||
          scaled > std::numeric_limits<std::int64_t>::max())
        throw UsageError{overflow};
      const std::string number = text.substr(0, text.size() - 1);
      try {
        return exact_count(option, number, static_cast<std::int64_t>(scaled));
      } catch (UsageError& error) {  // say the text as given: '1.0001K', not '1.0001'
        if (const auto at = error.message.find("'" + number + "'"); at != std::string::npos)
          error.message.replace(at, number.size() + 2, "'" + text + "'");
        throw;
      }
    }
  if (auto count = parse_count(text)) {
    value = *count;
  } else if (auto decimal = parse_decimal(text)) {
    value = decimal->mantissa;
    for (int e = 0; e < decimal->exponent; ++e)
      if (__builtin_mul_overflow(value, Count128{10}, &value)) throw UsageError{overflow};
    Count128 divisor = 1;
    for (int e = decimal->exponent; e < 0; ++e)
      if (__builtin_mul_overflow(divisor, Count128{10}, &divisor)) throw UsageError{option + ": cannot parse '" + text + "'"};
    if (__builtin_mul_overflow(value, Count128{unit}, &value)) throw UsageError{overflow};
    if (value % divisor != 0) throw UsageError{option + ": '" + text + "' is not a whole number"};
    value /= divisor;
    unit = 1;
  } else {
    throw UsageError{option + ": cannot parse '" + text + "' (expected e.g. 70B, 15T, 1.5T, 7e9, 8192, 64Ki)"};
  }
  if (__builtin_mul_overflow(value, Count128{unit}, &value) || value > std::numeric_limits<std::int64_t>::max())
    throw UsageError{overflow};
  return static_cast<std::int64_t>(value);
}

std::int64_t positive_exact_count(const std::string& option, const std::string& text) {
  const std::int64_t value = exact_count(option, text);
  if (value == 0) throw UsageError{option + ": expected a positive count (got '" + text + "')"};
  return value;
}

// parse_number's double alone (a decimal out of f64's range is +/-inf or 0, refused below).
std::optional<double> parse_number_value(std::string_view text) {
  const auto number = parse_number(text);
  return number ? std::optional<double>(number->value) : std::nullopt;
}

// A fraction in (0, 1]: "0.5" or "50%".
double fraction_option(const std::string& option, const std::string& text) {
  std::string number = text;
  double scale = 1;
  if (number.ends_with('%')) {
    number.pop_back();
    scale = 100;
  }
  auto value = parse_number_value(number);
  if (!value || !std::isfinite(*value) || *value / scale <= 0 || *value / scale > 1)
    throw UsageError{option + ": expected a fraction in (0, 1] such as 0.5 or 50% (got '" + text + "')"};
  return *value / scale;
}

// "0.35s", "350ms", "350us", "0.35" (seconds).
double seconds_option(const std::string& option, const std::string& text) {
  std::string number = text;
  double scale = 1;
  for (const auto& [suffix, factor] : {std::pair<const char*, double>{"ms", 1e-3}, {"us", 1e-6}, {"s", 1.0}})
    if (number.ends_with(suffix)) {
      number.resize(number.size() - std::string_view(suffix).size());
      scale = factor;
      break;
    }
  auto value = parse_number_value(number);
  if (!value || !std::isfinite(*value) || *value <= 0)
    throw UsageError{option + ": expected a positive time such as 0.35s or 350ms (got '" + text + "')"};
  return *value * scale;
}

// "8x80GB", "80GB", "640GiB", "1.5TB": bytes, exact.
std::int64_t memory_option(const std::string& option, const std::string& text) {
  std::string size = text;
  std::int64_t count = 1;
  if (const auto x = text.find('x'); x != std::string::npos) {
    count = positive_exact_count(option + " (device count)", text.substr(0, x));
    size = text.substr(x + 1);
  }
  static const std::pair<const char*, std::int64_t> units[] = {
      {"KiB", std::int64_t{1} << 10}, {"MiB", std::int64_t{1} << 20}, {"GiB", std::int64_t{1} << 30},
      {"TiB", std::int64_t{1} << 40}, {"KB", 1'000},                  {"MB", 1'000'000},
      {"GB", 1'000'000'000},          {"TB", 1'000'000'000'000},      {"B", 1}};
  const std::string expected = option + ": cannot parse '" + text + "' (expected e.g. 8x80GB, 80GB, 640GiB)";
  for (const auto& [suffix, unit] : units) {
    if (!size.ends_with(suffix)) continue;
    const std::string number = size.substr(0, size.size() - std::string_view(suffix).size());
    if (!parse_count(number) && !parse_decimal(number)) throw UsageError{expected};
    const std::int64_t each = exact_count(option, number, unit);
    std::int64_t total = 0;
    if (__builtin_mul_overflow(each, count, &total)) throw UsageError{option + ": '" + text + "' overflows a 64-bit count"};
    if (total == 0) throw UsageError{option + ": expected a positive size (got '" + text + "')"};
    return total;
  }
  throw UsageError{expected};
}

}  // namespace flopscope::cli

namespace flopscope::cli {

const GpuSpec& gpu_option(const std::string& text) {
  const GpuSpec* device = find_gpu_by_name(text);
  if (!device)
    throw UsageError{"--device: unknown device '" + text + "' (known: " + gpu_name_list() +
                     "; for another, give --peak FLOP/s)"};
  return *device;
}

// "989e12", "989T", "989TFLOP/s", "3.35TB/s", "3350GB/s", "3.35e12": per second, with `unit`
// ("FLOP/s" or "B/s") optional.
double rate_option(const std::string& option, const std::string& text, std::string_view unit) {
  std::string number = text;
  if (number.ends_with(unit)) number.resize(number.size() - unit.size());
  else if (unit == "FLOP/s" && number.ends_with("FLOPS")) number.resize(number.size() - 5);
  double scale = 1;
  static const std::pair<char, double> prefixes[] = {{'K', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}, {'P', 1e15}};
  for (const auto& [letter, factor] : prefixes)
    if (!number.empty() && number.back() == letter) {
      number.pop_back();
      scale = factor;
      break;
    }
  const auto value = parse_number_value(number);
  if (!value || !std::isfinite(*value) || *value <= 0)
    throw UsageError{option + ": expected a positive rate such as 989e12, 989T or 989T" + std::string(unit) +
                     " (got '" + text + "')"};
  return *value * scale;
}

}  // namespace flopscope::cli
