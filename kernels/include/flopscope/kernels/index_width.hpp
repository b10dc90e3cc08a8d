// Which integer a grid-stride CUDA kernel does its index math in: 32 bits where every index fits
// (a 64-bit division or remainder is a long instruction sequence on a GPU, a 32-bit one a few
// instructions), else 64. A pure function of the sizes, so that the choice is tested on a host.
#pragma once

#include <cstdint>
#include <limits>

namespace flopscope::kernels {

// True where a grid-stride loop over `count` items run by `threads` threads, reading or writing
// element offsets up to `largest_offset`, forms no index past int32: the loop counter's last
// value (below count + threads) and every offset.
constexpr bool fits_int32(std::int64_t count, std::int64_t threads, std::int64_t largest_offset) {
  constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
  return count >= 0 && threads >= 0 && largest_offset >= 0 && threads <= most && count <= most - threads &&
         largest_offset <= most;
}

}  // namespace flopscope::kernels
