#include "flopscope/checked.hpp"

#include <algorithm>

namespace flopscope {

std::string count_str(Count128 value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  std::string digits;
  // Digits of the magnitude, taken from the negative side so that the smallest value works too.
  for (Count128 v = negative ? value : -value; v != 0; v /= 10) digits += static_cast<char>('0' - int(v % 10));
  if (negative) digits += '-';
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::int64_t checked_numel(std::span<const std::int64_t> sizes, std::string_view what) {
  for (std::int64_t size : sizes)
    if (size < 0) throw std::invalid_argument(std::string(what) + ": negative size " + std::to_string(size));
  // A zero anywhere makes it 0, however large the others ([2^62, 4, 0] is an empty tensor).
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return 0;
  std::int64_t numel = 1;
  for (std::int64_t size : sizes) numel = checked_mul<std::int64_t>(numel, size, what);
  return numel;
}

std::int64_t checked_bytes(std::int64_t count, std::size_t element_size, std::string_view what) {
  if (count < 0) throw std::invalid_argument(std::string(what) + ": negative count " + std::to_string(count));
  return checked_mul<std::int64_t>(count, static_cast<std::int64_t>(element_size), what);
}

std::size_t to_size(std::int64_t value, std::string_view what) {
  if (value < 0) throw std::invalid_argument(std::string(what) + ": negative value " + std::to_string(value));
  return static_cast<std::size_t>(value);
}

}  // namespace flopscope
