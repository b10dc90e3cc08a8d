// einops rearrange and reduce patterns. The input is lines: the pattern, the tensor's shape (as
// --shapes reads it: "2^40x3", "scalar"), then optional "name=length" axis lengths, one per
// line, and an optional "reduce=<sum|mean|max|min|prod>". Large tensors are one element expanded
// (stride 0: no memory); where the sizes multiply to at most 4096 (zeros counted as ones) they
// are real random values.
// A result is a PatternError, a SizeOverflow or consistent: rearrange keeps the element count,
// and on real values gives what reduce(sum) with the same pattern gives (nothing reduced).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli_numbers.hpp"
#include "flopscope/checked.hpp"
#include "flopscope/einops.hpp"
#include "flopscope/sizes.hpp"
#include "fuzz_check.hpp"

using namespace flopscope;

namespace {

constexpr std::int64_t kRealElements = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto lines = fuzz::split(fuzz::text_of(data, size), '\n');
  if (lines.size() < 2 || lines.size() > 8) return 0;
  const std::string_view pattern = lines[0];
  const auto shape = cli::parse_shape_argument(lines[1]);
  if (!shape || shape->size() > 8) return 0;
  AxisLengths lengths;
  std::optional<Reduction> reduction;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    const std::size_t eq = lines[i].find('=');
    if (eq == std::string_view::npos) return 0;
    const std::string_view key = lines[i].substr(0, eq), value = lines[i].substr(eq + 1);
    if (key == "reduce") {
      try {
        reduction = parse_reduction(value);
      } catch (const std::invalid_argument&) {
        return 0;  // not a reduction's name: parse_reduction's documented error
      }
      continue;
    }
    const bool negative = value.starts_with('-');  // a negative length must be an error, not a crash
    const auto length = parse_count(negative ? value.substr(1) : value);
    if (!length) return 0;
    lengths.emplace_back(std::string(key), negative ? -*length : *length);
  }

  // Real values only where every size is small, empty or not: reduce over the empty dimension of
  // [2^40, 0] would write 2^40 outputs.
  Count128 span = 1;
  for (std::int64_t dim : *shape) span = std::min<Count128>(span * std::max<std::int64_t>(dim, 1), kRealElements + 1);
  const bool real = span <= kRealElements;
  try {
    // An empty shape whose strides overflow ([0, 2^62, 13200]) is a SizeOverflow here already.
    const Tensor x = real ? randn(*shape, 7, {DType::f64}) : zeros({1}, {DType::f64}).expand(*shape);
    if (reduction) {
      if (!real) return 0;  // reduce walks every element
      const Tensor reduced = reduce(x, pattern, *reduction, lengths);
      FUZZ_CHECK(reduced.numel() <= x.numel() || x.numel() == 0, "reduce grew the tensor");
      return 0;
    }
    const RearrangeResult result = rearrange(x, pattern, lengths);
    FUZZ_CHECK(result.tensor.numel() == x.numel(),
               "rearrange changed the element count: " + shape_str(x.shape()) + " -> " + shape_str(result.tensor.shape()));
    if (!real) {
      FUZZ_CHECK(result.is_view, "a stride-0 tensor was copied");
      return 0;
    }
    std::optional<Tensor> summed;
    try {
      summed = reduce(x, pattern, Reduction::sum, lengths);
    } catch (const std::invalid_argument& error) {
      FUZZ_CHECK(false, std::string("reduce rejects what rearrange accepted: ") + error.what());
    }
    FUZZ_CHECK(summed->shape() == result.tensor.shape(), "reduce(sum) and rearrange give different shapes");
    FUZZ_CHECK(summed->to_vector() == result.tensor.to_vector(), "reduce(sum) and rearrange give different values");
  } catch (const PatternError&) {
  } catch (const SizeOverflow&) {
  } catch (const ShapeError&) {
  }
  return 0;
}
