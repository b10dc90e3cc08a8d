// The cache-line model of lib/'s accounting (lines_touched, strided_copy_bytes_touched) and the
// logical bytes of a strided copy, against hand-computed cases, and against a brute-force count
// of distinct lines on random views.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "flopscope/accounting.hpp"
#include "flopscope/tensor.hpp"

using namespace flopscope;

namespace {

using Dims = std::vector<std::int64_t>;

std::int64_t lines(const Dims& sizes, const Dims& strides, std::int64_t offset, std::int64_t element,
                   std::int64_t line = kCpuCacheLineBytes) {
  return lines_touched(sizes, strides, offset, element, line);
}

// Every element's line, listed: what the model must equal.
std::int64_t lines_by_hand(const Dims& sizes, const Dims& strides, std::int64_t offset, std::int64_t element,
                           std::int64_t line) {
  std::set<std::int64_t> seen;
  const Shape shape(sizes.begin(), sizes.end());
  for (StridedIterator it(shape, {strides}, {offset}); !it.done(); it.next()) seen.insert(it.offset(0) * element / line);
  return std::int64_t(seen.size());
}

}  // namespace

TEST(CacheLines, ContiguousRunsCountTheirLines) {
  EXPECT_EQ(lines({1024}, {1}, 0, 4), 64);      // 4 KiB: 64 lines
  EXPECT_EQ(lines({17}, {1}, 0, 4), 2);         // 68 bytes
  EXPECT_EQ(lines({32}, {1}, 1, 4), 3);         // bytes 4..131: lines 0, 1, 2
  EXPECT_EQ(lines({16}, {1}, 0, 4), 1);
  EXPECT_EQ(lines({16}, {1}, 8, 4), 2);         // bytes 32..95
  EXPECT_EQ(lines({0, 5}, {5, 1}, 0, 4), 0);
  EXPECT_EQ(lines({}, {}, 7, 8), 1);            // one element
  EXPECT_EQ(lines({64}, {1}, 0, 4, kCudaSectorBytes), 8);
}

TEST(CacheLines, ATransposeTouchesWhatTheMatrixHolds) {
  // (m, n) -> view (n, m), strides (1, n): every line of the matrix, once.
  EXPECT_EQ(lines({4096, 8192}, {1, 4096}, 0, 4), 8192 * 4096 * 4 / 64);
  EXPECT_EQ(lines({4097, 4095}, {1, 4097}, 0, 4), (4095 * 4097 * 4 + 63) / 64);
  // Split heads (B,T,H,d) -> (B,H,T,d): a permutation of a contiguous tensor.
  EXPECT_EQ(lines({8, 12, 1024, 64}, {1024 * 12 * 64, 64, 12 * 64, 1}, 0, 2), 8 * 1024 * 12 * 64 * 2 / 64);
}

TEST(CacheLines, ASliceWithAStepReadsTheWholeLinesAroundItsElements) {
  // x[:, ::k] of a (4, 64) f32 matrix: rows of 256 bytes, 4 lines each.
  EXPECT_EQ(lines({4, 64}, {64, 1}, 0, 4), 16);   // k = 1
  EXPECT_EQ(lines({4, 32}, {64, 2}, 0, 4), 16);   // k = 2: still every line
  EXPECT_EQ(lines({4, 4}, {64, 16}, 0, 4), 16);   // k = 16: one line per element, 16 of them
  EXPECT_EQ(lines({4, 2}, {64, 32}, 0, 4), 8);    // k = 32: half the lines
  // f8, k = 16: 4 elements per line, every line read.
  EXPECT_EQ(lines({4, 16}, {256, 16}, 0, 1), 16);
  // Rows that share a line: x[:, ::2] of a (3, 5) f32 matrix lies in bytes 0..59, one line.
  EXPECT_EQ(lines({3, 3}, {5, 2}, 0, 4), 1);
  // ... and of a (3, 20) one: rows of 80 bytes at 80-byte pitch: bytes 0..227, four lines.
  EXPECT_EQ(lines({3, 10}, {20, 2}, 0, 4), 4);
}

TEST(CacheLines, AnExpandedSourceIsReadOnce) {
  EXPECT_EQ(lines({1000, 16}, {0, 1}, 0, 4), 1);   // a row of 64 bytes, repeated
  EXPECT_EQ(lines({32, 1000}, {1, 0}, 0, 4), 2);   // a column of 32 f32, repeated
  EXPECT_EQ(lines({8, 1024, 768}, {0, 768, 1}, 0, 4), 1024 * 768 * 4 / 64);
}

TEST(CacheLines, InterleavedRowsAreCountedOnce) {
  // sizes (3, 2), strides (2, 3) of f64 in 32-byte sectors: elements 0, 2, 4, 3, 5, 7 lie in
  // bytes 0, 16, 32, 24, 40, 56: sectors 0 and 1.
  EXPECT_EQ(lines({3, 2}, {2, 3}, 0, 8, kCudaSectorBytes), 2);
  // Overlapping as_strided rows: (4, 8) with strides (2, 1) of f32, elements 0..13: one line.
  EXPECT_EQ(lines({4, 8}, {2, 1}, 0, 4), 1);
}

TEST(CacheLines, EqualsABruteForceCountOnRandomViews) {
  std::uint64_t state = 12345;
  auto draw = [&](std::int64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return std::int64_t((state >> 33) % std::uint64_t(bound));
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const auto dims = std::size_t(1 + draw(4));
    Dims sizes(dims), strides(dims);
    for (std::size_t d = 0; d < dims; ++d) {
      sizes[d] = 1 + draw(9);
      strides[d] = draw(5) == 0 ? 0 : 1 + draw(70);
    }
    const std::int64_t element = std::int64_t{1} << draw(4), line = draw(2) ? 64 : 32, offset = draw(40);
    ASSERT_EQ(lines(sizes, strides, offset, element, line), lines_by_hand(sizes, strides, offset, element, line))
        << "trial " << trial << ": sizes " << shape_str(sizes) << " strides " << shape_str(strides) << " offset "
        << offset << " element " << element << " line " << line;
  }
}

TEST(CacheLines, BytesTouchedOfAStridedCopyAddsSourceAndDestination) {
  // x[:, ::16] of a (1024, 1024) f32 matrix into a contiguous (1024, 64): the source's 64 lines
  // per row, the destination's 4.
  const Dims sizes{1024, 64}, dst{64, 1}, src{1024, 16};
  EXPECT_EQ(strided_copy_bytes_touched(sizes, dst, 0, src, 0, DType::f32, kCpuCacheLineBytes),
            (1024 * 64 + 1024 * 4) * 64);
  EXPECT_EQ(strided_copy_cost(sizes, src, DType::f32), (Cost{0, 2 * 1024 * 64 * 4}));
  // On a GPU, 32-byte sectors: the source's 64 f32 per row lie in 64 sectors, the destination's in 8.
  EXPECT_EQ(strided_copy_bytes_touched(sizes, dst, 0, src, 0, DType::f32, kCudaSectorBytes), (1024 * 64 + 1024 * 8) * 32);
}

TEST(CacheLines, AnExpandCountsItsSourceOnceInTheLogicalBytes) {
  EXPECT_EQ(strided_copy_cost(Dims{8, 1024, 768}, Dims{0, 768, 1}, DType::bf16), (Cost{0, (1024 * 768 + 8 * 1024 * 768) * 2}));
  EXPECT_EQ(strided_copy_cost(Dims{4096, 4096}, Dims{1, 4096}, DType::f32), copy_cost(4096 * 4096, DType::f32));
  EXPECT_EQ(strided_copy_cost(Dims{0, 7}, Dims{0, 1}, DType::f32), (Cost{0, 0}));
  EXPECT_THROW(lines({4}, {1}, 0, 3, 64), std::invalid_argument);
  EXPECT_THROW(strided_copy_cost(Dims{4}, Dims{}, DType::f32), std::invalid_argument);
}
