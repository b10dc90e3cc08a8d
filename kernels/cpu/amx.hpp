// What every AMX kernel needs before its first tile instruction (kernels/cpu/ internal).
#pragma once

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
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

// Note [AMX tiles]: eight tile registers of 16 rows x 64 bytes (16 f32, 32 bf16 or 16 bf16 pairs
// a row): the one configuration every flopscope AMX kernel uses. TDPBF16PS adds A·B (pairs of
// bf16 products, summed into f32) to a C tile. A kernel loads it once per thread and call
// (amx_begin) and releases the tiles after (amx_end): another library (oneDNN) may configure the
// tiles in between.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

__attribute__((target("amx-tile"))) inline void amx_begin() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}
__attribute__((target("amx-tile"))) inline void amx_end() { _tile_release(); }

}  // namespace flopscope::kernels
