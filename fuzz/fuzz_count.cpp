// parse_count (every size flag of the bench binaries and the tool) and format_count: a count that
// parses is non-negative, and its shortest form parses back to the same count.
#include <cstdint>
#include <string>
#include <string_view>

#include "flopscope/sizes.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  const auto count = flopscope::parse_count(text);
  if (!count) return 0;
  FUZZ_CHECK(*count >= 0, "parse_count('" + std::string(text) + "') = " + std::to_string(*count));
  const std::string shortest = flopscope::format_count(*count);
  FUZZ_CHECK(flopscope::parse_count(shortest) == count, "format_count(" + std::to_string(*count) + ") = '" + shortest +
                                                            "' does not parse back");
  FUZZ_CHECK(shortest.size() <= std::to_string(*count).size(), "format_count is longer than the decimal: " + shortest);
  // The grouped form has the same digits.
  std::string grouped = flopscope::format_thousands(*count);
  std::erase(grouped, ',');
  FUZZ_CHECK(grouped == std::to_string(*count), "format_thousands(" + std::to_string(*count) + ")");
  return 0;
}
