// How the CPU kernels split work across OpenMP threads (private to kernels/cpu/).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>

namespace flopscope::kernels {

// Calls chunk(begin, count) once per OpenMP thread over [0, count), every chunk but the first
// starting at a multiple of `alignment` (pick it so that a chunk boundary is a cache-line
// boundary: two threads then never write one line). Below `min_parallel`, or with one item, one
// call on this thread: a parallel region costs more than it saves there.
template <class ChunkFn>
void parallel_chunks(std::size_t count, std::size_t alignment, std::size_t min_parallel, ChunkFn&& chunk) {
  const int threads = omp_get_max_threads();
  if (threads <= 1 || count < std::max<std::size_t>(min_parallel, 2)) {
    chunk(std::size_t{0}, count);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const auto n = static_cast<std::size_t>(omp_get_num_threads());
    auto boundary = [&](std::size_t i) { return i == n ? count : std::min(count, count * i / n / alignment * alignment); };
    const std::size_t begin = boundary(t), end = boundary(t + 1);
    if (end > begin) chunk(begin, end - begin);
  }
}

}  // namespace flopscope::kernels
