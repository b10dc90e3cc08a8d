// Overflow-checked integer arithmetic for element counts, bytes and FLOPs: the one place where a
// size is multiplied. A product or sum that does not fit throws SizeOverflow, whose message names
// what was being computed and the operands ("bytes of 2305843009213693952 x f64 elements
// overflow 64 bits"), so every caller turns it into a one-line error instead of a wrapped size.
//
// Counts of benchmarks and tensors fit in int64; FLOP totals of whole training runs do not
// (6 x 175e9 parameters x 300e9 tokens = 3.2e23 > 9.2e18), so the same functions work on
// Count128 (__int128), which holds 1.7e38.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace flopscope {

__extension__ typedef __int128 Count128;  // __extension__: GCC and Clang have it, ISO C++ does not

// A size computation that does not fit its integer type.
struct SizeOverflow : std::overflow_error {
  using std::overflow_error::overflow_error;
};

// Decimal digits of a 64- or 128-bit integer (std::to_string has no __int128 overload).
std::string count_str(Count128 value);

namespace detail {
template <class T>
[[noreturn]] void throw_overflow(std::string_view what, char op, T a, T b) {
  throw SizeOverflow(std::string(what) + ": " + count_str(a) + " " + op + " " + count_str(b) + " overflows " +
                     std::to_string(sizeof(T) * 8) + " bits");
}
}  // namespace detail

// a * b, a + b; nullopt when the result does not fit T (for parsers, which say "cannot parse").
template <class T>
std::optional<T> try_mul(T a, T b) {
  static_assert(std::is_integral_v<T> || std::is_same_v<T, Count128>);
  T out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

template <class T>
std::optional<T> try_add(T a, T b) {
  static_assert(std::is_integral_v<T> || std::is_same_v<T, Count128>);
  T out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a * b, a + b; SizeOverflow naming `what` when the result does not fit T.
template <class T>
T checked_mul(T a, T b, std::string_view what = "size") {
  const std::optional<T> out = try_mul(a, b);
  if (!out) detail::throw_overflow(what, 'x', a, b);
  return *out;
}

template <class T>
T checked_add(T a, T b, std::string_view what = "size") {
  const std::optional<T> out = try_add(a, b);
  if (!out) detail::throw_overflow(what, '+', a, b);
  return *out;
}

// Product of the sizes (1 for none, 0 when one is 0); SizeOverflow where it does not fit,
// std::invalid_argument for a negative size.
std::int64_t checked_numel(std::span<const std::int64_t> sizes, std::string_view what = "element count");

// count * element_size as bytes, checked; count must not be negative.
std::int64_t checked_bytes(std::int64_t count, std::size_t element_size, std::string_view what = "bytes");

// The value as a size_t for an allocation, with the same checks.
std::size_t to_size(std::int64_t value, std::string_view what = "size");

}  // namespace flopscope
