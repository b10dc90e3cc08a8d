#include "naming.hpp"

#include <charconv>
#include <stdexcept>

#include "flopscope/device.hpp"

namespace flopscope::bench {

namespace {

bool is_word(std::string_view s) {  // [a-z0-9_]+
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool is_key(std::string_view s) {  // [a-z_][a-z0-9_]*
  return is_word(s) && !(s[0] >= '0' && s[0] <= '9');
}

bool is_extra_value(std::string_view s) {  // [A-Za-z0-9_.:-]+
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == ':' || c == '-'))
      return false;
  return true;
}

bool is_dtype_field(std::string_view s) {
  auto arrow = s.find("->");
  if (arrow == std::string_view::npos) return is_word(s);
  return is_word(s.substr(0, arrow)) && is_word(s.substr(arrow + 2));
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

std::string CaseName::str() const {
  std::string out = family + "/" + variant + "/" + dtype + "/" + device + "/";
  for (std::size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + shape[i].first + "=" + std::to_string(shape[i].second);
  for (const auto& [key, value] : extras) out += "/" + key + "=" + value;
  return out;
}

std::int64_t CaseName::dim(std::string_view key) const {
  for (const auto& [k, v] : shape)
    if (k == key) return v;
  throw std::invalid_argument("case " + str() + " has no shape entry '" + std::string(key) + "'");
}

std::optional<CaseName> parse_case_name(std::string_view text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<CaseName> {
    if (error) *error = "'" + std::string(text) + "': " + why;
    return std::nullopt;
  };
  auto parts = split(text, '/');
  if (parts.size() < 5) return fail("expected <family>/<variant>/<dtype>/<device>/<shape>[/<extra>=<value>...]");
  CaseName name;
  if (!is_word(parts[0])) return fail("family '" + std::string(parts[0]) + "' is not [a-z0-9_]+");
  if (!is_word(parts[1])) return fail("variant '" + std::string(parts[1]) + "' is not [a-z0-9_]+");
  if (!is_dtype_field(parts[2])) return fail("dtype '" + std::string(parts[2]) + "' is not a dtype or from->to");
  if (!parse_device(parts[3])) return fail("device '" + std::string(parts[3]) + "' is not cpu or cuda:N");
  name.family = parts[0];
  name.variant = parts[1];
  name.dtype = parts[2];
  name.device = parts[3];
  for (auto entry : split(parts[4], ',')) {
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) return fail("shape entry '" + std::string(entry) + "' is not key=integer");
    auto key = entry.substr(0, eq), value = entry.substr(eq + 1);
    std::int64_t number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (!is_key(key) || value.empty() || ec != std::errc{} || ptr != value.data() + value.size())
      return fail("shape entry '" + std::string(entry) + "' is not key=integer");
    name.shape.emplace_back(std::string(key), number);
  }
  for (std::size_t i = 5; i < parts.size(); ++i) {
    auto eq = parts[i].find('=');
    if (eq == std::string_view::npos || !is_key(parts[i].substr(0, eq)) || !is_extra_value(parts[i].substr(eq + 1)))
      return fail("extra '" + std::string(parts[i]) + "' is not key=value");
    name.extras.emplace_back(std::string(parts[i].substr(0, eq)), std::string(parts[i].substr(eq + 1)));
  }
  return name;
}

}  // namespace flopscope::bench
