// Benchmark names, one grammar for every binary (DESIGN.md), parsed the same way by analysis/:
//   <family>/<variant>/<dtype>/<device>/<shape>[/<extra>=<value>...]
//   copy/simd/f32/cpu/n=268435456      matmul/cublas/bf16/cuda:0/m=8192,n=8192,k=8192
// family, variant: [a-z0-9_]+; dtype: [a-z0-9_]+ optionally "->" another (conversions);
// device: cpu | cuda:N; shape: key=integer, comma-separated; extras: key=[A-Za-z0-9_.:-]+.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flopscope::bench {

struct CaseName {
  std::string family, variant, dtype, device;
  std::vector<std::pair<std::string, std::int64_t>> shape;
  std::vector<std::pair<std::string, std::string>> extras;

  std::string str() const;
  std::int64_t dim(std::string_view key) const;  // a shape entry; throws if absent
  friend bool operator==(const CaseName&, const CaseName&) = default;
};

// nullopt and *error set to what is wrong when `text` is outside the grammar.
std::optional<CaseName> parse_case_name(std::string_view text, std::string* error = nullptr);

}  // namespace flopscope::bench
