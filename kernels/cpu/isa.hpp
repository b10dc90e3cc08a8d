// The vector width that the strided and broadcast kernels of kernels/cpu/ run at (private to it):
// the widest this CPU has, unless FLOPSCOPE_MAX_ISA caps it ("avx2" or "scalar"), so that the tests
// run the AVX2 kernels on an AVX-512 machine too.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "flopscope/cpu_info.hpp"

namespace flopscope::kernels {

enum class VectorIsa { scalar, avx2, avx512 };

inline VectorIsa vector_isa() {
  static const VectorIsa isa = [] {
    const char* cap = std::getenv("FLOPSCOPE_MAX_ISA");
    const std::string_view limit = cap ? cap : "";
    if (limit != "avx2" && limit != "scalar" && !cpu_lacks({"avx512f", "avx512bw", "avx512vl", "bmi2"}))
      return VectorIsa::avx512;
    if (limit != "scalar" && !cpu_lacks({"avx2"})) return VectorIsa::avx2;
    return VectorIsa::scalar;
  }();
  return isa;
}

// nullopt where vector_isa() has AVX2 at least; else why not ("this CPU lacks avx2").
inline std::optional<std::string> lacks_avx2() {
  if (vector_isa() != VectorIsa::scalar) return std::nullopt;
  if (auto reason = cpu_lacks({"avx2"})) return reason;
  return "FLOPSCOPE_MAX_ISA=scalar";
}

}  // namespace flopscope::kernels
