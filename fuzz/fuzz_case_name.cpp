// The benchmark-name grammar (bench/harness/naming.hpp parse_case_name):
//   <family>/<variant>/<dtype>/<device>/<shape>[/<extra>=<value>...]
// A name that parses formats to a string that parses to the same name, and that string formats
// to itself; a name written canonically (integers without leading zeros or '-0') formats back
// to exactly the text it came from. A rejected name says why and names the text.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "harness/naming.hpp"

using flopscope::bench::parse_case_name;

namespace {

// Whether every shape value is written as std::to_string writes it.
bool canonical_integers(const flopscope::bench::CaseName& name, std::string_view text) {
  std::string expected_shape;
  for (std::size_t i = 0; i < name.shape.size(); ++i)
    expected_shape += (i ? "," : "") + name.shape[i].first + "=" + std::to_string(name.shape[i].second);
  std::size_t start = 0;
  for (int slash = 0; slash < 4; ++slash) start = text.find('/', start) + 1;
  const std::size_t end = text.find('/', start);
  return text.substr(start, end == std::string_view::npos ? end : end - start) == expected_shape;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  std::string error;
  const auto name = parse_case_name(text, &error);
  if (!name) {
    FUZZ_CHECK(!error.empty(), "rejected without a reason");
    FUZZ_CHECK(error.find(std::string(text)) != std::string::npos, "the error does not name the text: " + error);
    return 0;
  }
  const std::string written = name->str();
  const auto again = parse_case_name(written);
  FUZZ_CHECK(again.has_value(), "'" + written + "' (from '" + std::string(text) + "') does not parse");
  FUZZ_CHECK(*again == *name, "'" + written + "' parses to another name");
  FUZZ_CHECK(again->str() == written, "'" + written + "' does not format to itself");
  if (canonical_integers(*name, text))
    FUZZ_CHECK(written == text, "'" + std::string(text) + "' formats as '" + written + "'");
  return 0;
}
