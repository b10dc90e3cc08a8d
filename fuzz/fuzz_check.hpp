// FUZZ_CHECK(condition, message): a property a fuzz target asserts. When it does not hold, it
// prints the message and aborts: libFuzzer keeps the input as a crash, replay_main fails.
// Exceptions a target does not expect are not caught, so they abort too (std::terminate).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(condition, message)                                                                 \
  do {                                                                                                 \
    if (!(condition)) {                                                                                \
      std::fprintf(stderr, "FUZZ_CHECK(%s) failed at %s:%d: %s\n", #condition, __FILE__, __LINE__,    \
                   std::string(message).c_str());                                                      \
      std::abort();                                                                                    \
    }                                                                                                  \
  } while (false)
