// The shape parsers: lib's parse_shape (flopscope memory --shape) and the tool's
// parse_shape_argument (flopscope einsum --shapes, which also takes "scalar"). A shape that
// parses formats back to the same shape; its element and byte counts are exact or SizeOverflow.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli_numbers.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/memory.hpp"
#include "fuzz_check.hpp"

using namespace flopscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  const auto shape = cli::parse_shape_argument(text);
  if (!shape) return 0;
  const auto lib_shape = parse_shape(text);
  FUZZ_CHECK(lib_shape == shape || text == "scalar" || text == "()", "parse_shape and parse_shape_argument differ");
  for (std::int64_t dim : *shape) FUZZ_CHECK(dim >= 0, "negative dimension in '" + std::string(text) + "'");
  const std::string written = format_shape(*shape);
  if (!shape->empty()) FUZZ_CHECK(parse_shape(written) == shape, "format_shape gives '" + written + "'");
  // Exact where it fits, SizeOverflow where it does not: never a wrapped count. A zero dimension
  // makes any shape empty ([2^40, 2^40, 0] has 0 elements).
  Count128 exact = 1;
  bool fits = true;
  for (std::int64_t dim : *shape) {
    exact *= dim;  // < 2^63 x 2^63: fits 128 bits
    if (exact > INT64_MAX) {
      fits = false;
      exact = INT64_MAX;
    }
  }
  if (std::find(shape->begin(), shape->end(), 0) != shape->end()) {
    fits = true;
    exact = 0;
  }
  for (DType dtype : kAllDTypes) {
    try {
      const std::int64_t bytes = tensor_bytes(*shape, dtype);
      FUZZ_CHECK(fits && bytes / static_cast<std::int64_t>(dtype_size(dtype)) == checked_numel(*shape) &&
                     Count128{bytes} == exact * static_cast<Count128>(dtype_size(dtype)),
                 "tensor_bytes of '" + std::string(text) + "' = " + std::to_string(bytes));
    } catch (const SizeOverflow&) {
      FUZZ_CHECK(!fits || exact * static_cast<Count128>(dtype_size(dtype)) > INT64_MAX,
                 "SizeOverflow for '" + std::string(text) + "' whose bytes fit");
    }
  }
  return 0;
}
