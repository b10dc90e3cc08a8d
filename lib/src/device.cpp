#include "flopscope/device.hpp"

#include <charconv>

namespace flopscope {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::optional<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  constexpr std::string_view prefix = "cuda:";
  if (!text.starts_with(prefix) || text.size() == prefix.size()) return std::nullopt;
  int ordinal = 0;
  const char* first = text.data() + prefix.size();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, ordinal);
  if (ec != std::errc{} || ptr != last || ordinal < 0) return std::nullopt;
  return Device::cuda(ordinal);
}

}  // namespace flopscope
