// The stopping rule's blocks and rounds (bench/harness/rounds.hpp): which cases run side by side,
// and when a block's cases finish.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/rounds.hpp"

using flopscope::bench::blocks_of;
using flopscope::bench::finished_after_round;
using Blocks = std::vector<std::vector<std::size_t>>;

using flopscope::bench::kNoBaseline;
using flopscope::bench::kPreparedBytes;
using flopscope::bench::kPreparedCases;
constexpr std::size_t kNone = kNoBaseline;

TEST(Rounds, CasesWithoutABaselineRunInBlocksOfConsecutiveShapes) {
  // Three variants of four shapes: a shape's variants stay whole, a block takes the next shape
  // while it has fewer than 6 cases.
  std::vector<std::string> names;
  for (const char* shape : {"m=1,n=1,k=1", "m=2,n=2,k=2", "m=3,n=3,k=3", "m=4,n=4,k=4"})
    for (const char* variant : {"microkernel", "onednn", "openblas"})
      names.push_back(std::string("matmul/") + variant + "/f32/cpu/" + shape + "/layout=NN");
  const std::vector<bool> baseline(names.size(), false);
  const std::vector<std::size_t> against(names.size(), kNone), bytes(names.size(), 1);
  EXPECT_EQ(blocks_of(names, baseline, against, bytes), (Blocks{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}}));
}

TEST(Rounds, ACopyBaselineGathersTheCasesSetAgainstIt) {
  // bench_strided's planned order: the copies first, then each view kind's cases; a slice step 1
  // of a 4 x 4 matrix has the 4 x 4 transposes' 16 elements, so it is set against their copy.
  const std::vector<std::string> names = {
      "strided/copy/f32/cpu/n=16",                            // 0: copy of 16 elements
      "strided/copy/f32/cpu/n=64",                            // 1: copy of 64 elements
      "strided/copy/f32/cpu/n=8",                             // 2: copy of 8 elements
      "strided/simd/f32/cpu/m=4,n=4/view=transpose",          // 3: against 0
      "strided/reorder/f32/cpu/m=4,n=4/view=transpose",       // 4: against 0
      "strided/simd/f32/cpu/m=8,n=8/view=transpose",          // 5: against 1
      "strided/reorder/f32/cpu/m=8,n=8/view=transpose",       // 6: against 1
      "strided/simd/f32/cpu/m=4,n=4/view=slice/step=1",       // 7: against 0
      "strided/reorder/f32/cpu/m=4,n=4/view=slice/step=1",    // 8: against 0
      "strided/simd/f32/cpu/m=4,n=4/view=slice/step=2",       // 9: against 2
      "strided/reorder/f32/cpu/m=4,n=4/view=slice/step=2",    // 10: against 2
  };
  const std::vector<bool> baseline = {true, true, true, false, false, false, false, false, false, false, false};
  const std::vector<std::size_t> against = {kNone, kNone, kNone, 0, 0, 1, 1, 0, 0, 2, 2};
  const std::vector<std::size_t> bytes(names.size(), 1);
  // Each copy at the front of the block of the cases set against it, in the place of the first;
  // 4 x 4 and 8 x 8 no longer share a block, since their copies differ.
  EXPECT_EQ(blocks_of(names, baseline, against, bytes), (Blocks{{0, 3, 4, 7, 8}, {1, 5, 6}, {2, 9, 10}}));

  // With its partners filtered out, a copy is a case like any other: it runs in the block of its
  // neighbours (by planned order).
  EXPECT_EQ(blocks_of({names[0], names[5], names[6]}, {true, false, false}, {kNone, kNone, kNone}, {1, 1, 1}),
            (Blocks{{0, 1, 2}}));
}

TEST(Rounds, ABlockGathersCasesWhileItsCasesAndBytesFit) {
  // A copy (0) and three runs of 6 conversions set against it, in shapes of 2 variants.
  std::vector<std::string> names = {"convert/copy/f32->f32/cpu/n=8"};
  for (int run = 0; run < 3; ++run)
    for (const char* dtype : {"f32->bf16", "f32->f16", "bf16->f32"})
      for (const char* variant : {"scalar", "simd"})
        names.push_back("convert/" + std::string(variant) + "/" + dtype + "_" + std::to_string(run) + "/cpu/n=8");
  std::vector<bool> baseline(names.size(), false);
  baseline[0] = true;
  std::vector<std::size_t> against(names.size(), 0);
  against[0] = kNone;
  auto range = [](std::size_t from, std::size_t to) {
    std::vector<std::size_t> out;
    for (std::size_t i = from; i < to; ++i) out.push_back(i);
    return out;
  };
  std::vector<std::size_t> within(names.size(), 1);
  // 1 + 18 cases: the third run would make 19 > kPreparedCases (18), so it is a block of its own.
  ASSERT_EQ(kPreparedCases, 18u);
  std::vector<std::size_t> first = range(0, 13);
  EXPECT_EQ(blocks_of(names, baseline, against, within), (Blocks{first, range(13, 19)}));
  // A case not set up on the host (a skip, a CUDA case: 0 bytes) does not count: with one of the
  // first run's variants of each shape a skip, all 18 fit beside the copy.
  std::vector<std::size_t> skips = within;
  for (std::size_t i = 1; i < 7; i += 2) skips[i] = 0;
  EXPECT_EQ(blocks_of(names, baseline, against, skips), (Blocks{range(0, 19)}));
  // By bytes: each case (the copy too) a tenth of kPreparedBytes: the copy and the first run take
  // seven tenths, so neither later run of six fits beside them.
  std::vector<std::size_t> heavy(names.size(), kPreparedBytes / 10);
  EXPECT_EQ(blocks_of(names, baseline, against, heavy), (Blocks{range(0, 7), range(7, 13), range(13, 19)}));
}

TEST(Rounds, ABaselineGoesOnWhileAnotherCaseOfItsBlockIsOpen) {
  // Cases: 0 the copy baseline, 1 and 2 views set against it.
  const std::vector<bool> baseline = {true, false, false};
  const std::vector<bool> all_open = {true, true, true};
  // The copy resolved, a view not yet: the copy runs another round beside it; the resolved view finishes.
  EXPECT_EQ(finished_after_round(baseline, all_open, {true, false, true}, {false, false, false}),
            (std::vector<bool>{false, false, true}));
  // Every case resolved: all finish.
  EXPECT_EQ(finished_after_round(baseline, all_open, {true, true, true}, {false, false, false}),
            (std::vector<bool>{true, true, true}));
  // The open view halted (failed, or at 20 repetitions): nothing is left to pair the copy with.
  EXPECT_EQ(finished_after_round(baseline, all_open, {true, false, true}, {false, true, false}),
            (std::vector<bool>{true, true, true}));
  // The copy itself at 20 (halted) finishes whatever the others do; an unresolved case goes on.
  EXPECT_EQ(finished_after_round(baseline, all_open, {false, false, false}, {true, false, false}),
            (std::vector<bool>{true, false, false}));
  // Cases finished in earlier rounds (not open) neither finish again nor hold the copy back.
  EXPECT_EQ(finished_after_round(baseline, {true, false, true}, {true, false, false}, {false, false, false}),
            (std::vector<bool>{false, false, false}));
  EXPECT_EQ(finished_after_round(baseline, {true, false, false}, {true, false, false}, {false, false, false}),
            (std::vector<bool>{true, false, false}));
  // Two cases, neither a baseline: each finishes on its own.
  EXPECT_EQ(finished_after_round({false, false}, {true, true}, {true, false}, {false, false}),
            (std::vector<bool>{true, false}));
}
