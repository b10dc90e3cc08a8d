// flopscope convert --to DTYPE [--saturate] [VALUE...]: what numbers become in a dtype.
// Values come from the arguments, or from standard input one per line. Each output line is
// tab-separated: the input as written, the stored bit pattern in hex, the decoded value (the
// shortest decimal that reads back as the same f32; as the same f64 for --to f64) and what
// happened (exact, rounded, underflow to zero, overflow to inf, overflow to NaN, saturated, NaN).
// Decimal inputs are read as the nearest double and rounded once more, to the dtype; what happened
// is said of the decimal as written ("0.1" is rounded in f64 too; "1e400" overflows, "1e-400"
// underflows in every dtype). 0x... inputs are f32 bit patterns.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_numbers.hpp"
#include "commands.hpp"

namespace flopscope::cli {

namespace {

class Converter {
 public:
  Converter(DType dtype, bool saturate) : dtype_(dtype), saturate_(saturate) { out_.reserve(1 << 20); }
  ~Converter() { flush(); }

  // false when `text` is not a number.
  bool line(std::string_view text) {
    if (!append_conversion(out_, text, dtype_, saturate_)) return false;
    if (out_.size() > (1 << 20) - 256) flush();
    return true;
  }

  void flush() {
    if (!out_.empty()) std::fwrite(out_.data(), 1, out_.size(), stdout);
    out_.clear();
  }

 private:
  DType dtype_;
  bool saturate_;
  std::string out_;
};

[[noreturn]] void cannot_parse(std::size_t line_number, std::string_view text, const char* where) {
  std::string shown(text.substr(0, 80));
  throw UsageError{std::string(where) + " " + std::to_string(line_number) + ": cannot parse '" + shown + "'"};
}

}  // namespace

int cmd_convert(const Args& args) {
  std::optional<DType> dtype;
  bool saturate = false;
  std::vector<std::string> values;
  OptionReader options(args);
  while (!options.done()) {
    const std::string_view name = options.name();
    if (name == "--to") dtype = dtype_option(options.take_value());
    else if (name == "--saturate") saturate = (options.take_flag(), true);
    else if (name.empty()) values.push_back(options.take_positional());
    else options.unknown();
  }
  if (!dtype) throw UsageError{"missing --to DTYPE (one of " + dtype_list() + ")"};

  Converter converter(*dtype, saturate);
  if (!values.empty()) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::string_view text = trim_blanks(values[i]);
      if (!converter.line(text)) {
        converter.flush();
        cannot_parse(i + 1, values[i], "argument");
      }
    }
    return 0;
  }

  // Standard input, read in large blocks; a line may straddle two blocks.
  std::vector<char> buffer(std::size_t{1} << 20);
  std::string carry;
  std::size_t line_number = 0;
  auto handle = [&](std::string_view text) {
    ++line_number;
    if (!converter.line(trim_blanks(text))) {
      converter.flush();
      cannot_parse(line_number, trim_blanks(text), "line");
    }
  };
  while (true) {
    const std::size_t got = std::fread(buffer.data(), 1, buffer.size(), stdin);
    if (got == 0) {
      if (std::ferror(stdin)) {
        converter.flush();
        throw UsageError{std::string("cannot read standard input: ") + std::strerror(errno)};
      }
      break;
    }
    std::string_view block(buffer.data(), got);
    while (!block.empty()) {
      const auto newline = block.find('\n');
      if (newline == std::string_view::npos) {
        carry.append(block);
        break;
      }
      if (!carry.empty()) {
        carry.append(block.substr(0, newline));
        handle(carry);
        carry.clear();
      } else {
        handle(block.substr(0, newline));
      }
      block.remove_prefix(newline + 1);
    }
  }
  if (!carry.empty()) handle(carry);  // a last line without a newline
  return 0;
}

}  // namespace flopscope::cli
