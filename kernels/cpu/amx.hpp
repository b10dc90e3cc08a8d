// What every AMX kernel needs before its first tile instruction (kernels/cpu/ internal).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace flopscope::kernels {

// The process's permission to use AMX tile data (Linux: arch_prctl ARCH_REQ_XCOMP_PERM), asked
// once: nullopt where granted, else why not.
inline std::optional<std::string> amx_refused() {
  static const std::optional<std::string> refused = []() -> std::optional<std::string> {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) != 0)
      return "the OS refused AMX tile data to this process (arch_prctl ARCH_REQ_XCOMP_PERM)";
    return std::nullopt;
  }();
  return refused;
}

}  // namespace flopscope::kernels
