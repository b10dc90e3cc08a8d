// Devices are named "cpu" and "cuda:N" everywhere: benchmark names, flags, JSON context.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace flopscope {

struct Device {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;  // the CUDA ordinal; 0 for the CPU

  static Device cpu() { return {Kind::cpu, 0}; }
  static Device cuda(int ordinal) { return {Kind::cuda, ordinal}; }
  bool is_cpu() const { return kind == Kind::cpu; }
  bool is_cuda() const { return kind == Kind::cuda; }
  std::string str() const;  // "cpu" or "cuda:0"
  friend bool operator==(const Device&, const Device&) = default;
};

// "cpu", "cuda" (= cuda:0) or "cuda:N"; nullopt for anything else.
std::optional<Device> parse_device(std::string_view text);

}  // namespace flopscope
