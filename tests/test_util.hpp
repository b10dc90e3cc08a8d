// Small helpers shared by the C++ tests.
#pragma once

#include <exception>
#include <string>
#include <vector>

namespace flopscope::test_util {

using Values = std::vector<double>;

// The message of the exception f() throws, or "(no exception)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace flopscope::test_util
