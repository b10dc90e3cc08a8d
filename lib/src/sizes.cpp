#include "flopscope/sizes.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "flopscope/checked.hpp"

namespace flopscope {

namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

constexpr std::array<std::pair<std::string_view, std::int64_t>, 8> kSuffixes = {{
    {"Ki", std::int64_t{1} << 10}, {"Mi", std::int64_t{1} << 20},
    {"Gi", std::int64_t{1} << 30}, {"Ti", std::int64_t{1} << 40},
    {"K", 1'000},                  {"M", 1'000'000},
    {"G", 1'000'000'000},          {"T", 1'000'000'000'000},
}};

}  // namespace

std::optional<std::int64_t> parse_count(std::string_view text) {
  if (auto caret = text.find('^'); caret != std::string_view::npos) {
    auto base = parse_integer(text.substr(0, caret));
    auto exponent = parse_integer(text.substr(caret + 1));
    if (!base || !exponent || *exponent > 62) return std::nullopt;
    std::int64_t value = 1;
    for (std::int64_t i = 0; i < *exponent; ++i) {
      auto next = try_mul(value, *base);
      if (!next) return std::nullopt;
      value = *next;
    }
    return value;
  }
  if (auto e = text.find_first_of("eE"); e != std::string_view::npos) {
    auto mantissa = parse_integer(text.substr(0, e));
    auto exponent = parse_integer(text.substr(e + 1));
    if (!mantissa || !exponent || *exponent > 18) return std::nullopt;
    std::int64_t value = *mantissa;
    for (std::int64_t i = 0; i < *exponent; ++i) {
      auto next = try_mul<std::int64_t>(value, 10);
      if (!next) return std::nullopt;
      value = *next;
    }
    return value;
  }
  for (const auto& [suffix, scale] : kSuffixes) {
    if (text.size() > suffix.size() && text.ends_with(suffix)) {
      auto number = parse_integer(text.substr(0, text.size() - suffix.size()));
      if (!number) return std::nullopt;
      return try_mul(*number, scale);
    }
  }
  return parse_integer(text);
}

std::string format_count(std::int64_t count) {
  if (count > 0) {
    for (int i = 3; i >= 0; --i) {  // Ti, Gi, Mi, Ki
      std::int64_t scale = kSuffixes[static_cast<std::size_t>(i)].second;
      if (count % scale == 0)
        return std::to_string(count / scale) + std::string(kSuffixes[static_cast<std::size_t>(i)].first);
    }
  }
  return std::to_string(count);
}

namespace {

// value / base^k with the largest k that keeps it >= 1, as "%.2f unit" ("%.0f B" for bytes).
std::string format_scaled(double bytes, double base, const std::array<const char*, 6>& units) {
  std::size_t unit = 0;
  double value = bytes;
  while (std::fabs(value) >= base && unit + 1 < units.size()) {
    value /= base;
    ++unit;
  }
  char buffer[64];
  if (unit == 0)
    std::snprintf(buffer, sizeof buffer, "%.0f B", value);
  else
    std::snprintf(buffer, sizeof buffer, "%.2f %s", value, units[unit]);
  return buffer;
}

}  // namespace

std::string format_bytes_binary(double bytes) {
  return format_scaled(bytes, 1024.0, {"B", "KiB", "MiB", "GiB", "TiB", "PiB"});
}

std::string format_bytes_decimal(double bytes) {
  return format_scaled(bytes, 1000.0, {"B", "kB", "MB", "GB", "TB", "PB"});
}

std::string format_thousands(std::int64_t value) { return format_thousands128(value); }

std::string format_thousands128(Count128 value) {
  std::string digits = count_str(value);
  if (value < 0) digits.erase(0, 1);
  std::string out;
  const std::size_t lead = digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  out += digits.substr(0, lead);
  for (std::size_t i = lead; i < digits.size(); i += 3) out += "," + digits.substr(i, 3);
  return value < 0 ? "-" + out : out;
}

}  // namespace flopscope
