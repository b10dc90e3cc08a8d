// One line of `flopscope convert` (trim_blanks, parse_number, convert_number, the output line),
// in every dtype and both overflow modes. A line that converts has four tab-separated fields: the
// input, the bits in hex, the value, what happened. The value read back converts to the same
// bits; "exact" means the input is that value.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli_numbers.hpp"
#include "fuzz_check.hpp"

using namespace flopscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw = fuzz::text_of(data, size);
  if (raw.find('\n') != std::string_view::npos) return 0;  // the tool splits lines first
  const std::string_view text = cli::trim_blanks(raw);
  const auto number = cli::parse_number(text);
  for (DType dtype : kAllDTypes) {
    for (bool saturate : {false, true}) {
      std::string line;
      const bool converted = cli::append_conversion(line, text, dtype, saturate);
      FUZZ_CHECK(converted == number.has_value(), "append_conversion and parse_number disagree on '" + std::string(text) + "'");
      if (!converted) {
        FUZZ_CHECK(line.empty(), "output for a line that does not parse");
        continue;
      }
      FUZZ_CHECK(line.back() == '\n', "no newline: " + line);
      line.pop_back();
      const std::string rest = line.substr(text.size());
      const auto fields = fuzz::split(rest, '\t');
      FUZZ_CHECK(line.compare(0, text.size(), text) == 0 && fields.size() == 4 && fields[0].empty(),
                 "not '<input>\\t<bits>\\t<value>\\t<flag>': " + line);
      const Conversion c = cli::convert_number(dtype, *number, saturate);
      FUZZ_CHECK(fields[1] == cli::hex_bits(c.bits, dtype) && fields[3] == conversion_flag_name(c.flag), line);
      FUZZ_CHECK(c.value == decode_bits(dtype, c.bits) || (std::isnan(c.value) && std::isnan(decode_bits(dtype, c.bits))),
                 "value and bits differ: " + line);
      // The printed value, read back as the tool reads input, is the same bit pattern.
      const auto back = cli::parse_number(fields[2]);
      FUZZ_CHECK(back.has_value(), "the printed value does not parse: " + line);
      FUZZ_CHECK(encode_bits(dtype, back->value, saturate) == c.bits, "the printed value converts elsewhere: " + line);
      if (c.flag == ConversionFlag::exact)
        FUZZ_CHECK(number->read == cli::DecimalRead::exact && c.value == number->value, "'exact' but not: " + line);
      if (number->read == cli::DecimalRead::overflow || number->read == cli::DecimalRead::underflow)
        FUZZ_CHECK(c.flag != ConversionFlag::exact && c.flag != ConversionFlag::rounded, "out of f64's range: " + line);
    }
  }
  return 0;
}
