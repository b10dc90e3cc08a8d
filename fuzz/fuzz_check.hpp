// What every fuzz target uses.
// FUZZ_CHECK(condition, message): a property a fuzz target asserts. When it does not hold, it
// prints the message and aborts: libFuzzer keeps the input as a crash, replay_main fails.
// Exceptions a target does not expect are not caught, so they abort too (std::terminate).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(condition, message)                                                                 \
  do {                                                                                                 \
    if (!(condition)) {                                                                                \
      std::fprintf(stderr, "FUZZ_CHECK(%s) failed at %s:%d: %s\n", #condition, __FILE__, __LINE__,    \
                   std::string(message).c_str());                                                      \
      std::abort();                                                                                    \
    }                                                                                                  \
  } while (false)

namespace fuzz {

// The input as text.
inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The pieces of `text` between separators ("a\tb" -> "a", "b"; "" -> one empty piece).
inline std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find(separator, start);
    pieces.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return pieces;
    start = end + 1;
  }
}

}  // namespace fuzz
