// Grid sizes for the grid-stride kernels of the strided and broadcast families (private to
// kernels/cuda/).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace flopscope::kernels {

// Blocks for a grid-stride loop over `work` items, `per_block` items per block and step: as many
// as the work needs, at most 128 per SM of the current device (enough to fill each SM many times
// over; more would only cost launch time).
inline unsigned grid_blocks(std::int64_t work, std::int64_t per_block) {
  static const int most = [] {
    int device = 0, sms = 1;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return sms * 128;
  }();
  const std::int64_t needed = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(std::clamp<std::int64_t>(needed, 1, most));
}

}  // namespace flopscope::kernels
