// The stopping rule's blocks and rounds (bench/harness/rounds.hpp): which cases run side by side,
// and when a block's cases finish.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/rounds.hpp"

using flopscope::bench::blocks_of;
using flopscope::bench::finished_after_round;
using Blocks = std::vector<std::vector<std::size_t>>;

TEST(Rounds, ACopyBaselineJoinsTheBlockOfTheFirstCaseOfItsElementCount) {
  const std::vector<std::string> names = {
      "strided/copy/f32/cpu/n=16",                     // 0: baseline of the 4 x 4 views
      "strided/copy/f32/cpu/n=64",                     // 1: baseline of the 8 x 8 views
      "strided/simd/f32/cpu/m=4,n=4/view=transpose",   // 2
      "strided/reorder/f32/cpu/m=4,n=4/view=transpose",
      "strided/simd/f32/cpu/m=8,n=8/view=transpose",   // 4
      "strided/reorder/f32/cpu/m=8,n=8/view=transpose",
  };
  const std::vector<bool> baseline = {true, true, false, false, false, false};
  // Consecutive cases up to 6 a block, a shape's variants kept whole: one block of the four views,
  // the copies at its front.
  EXPECT_EQ(blocks_of(names, baseline), (Blocks{{0, 1, 2, 3, 4, 5}}));
  std::vector<std::string> more = names;
  std::vector<bool> more_baseline = baseline;
  for (const char* name : {"strided/naive/f32/cpu/m=4,n=4/view=transpose", "strided/blocked/f32/cpu/m=4,n=4/view=transpose"}) {
    more.insert(more.begin() + 4, name);
    more_baseline.insert(more_baseline.begin() + 4, false);
  }
  // Four 4 x 4 variants fill a block to 4, then 8 x 8's two make 6: one block still; with a third
  // shape past 6 cases, a new block, and each copy goes with its own shape's.
  more.push_back("strided/simd/f32/cpu/m=2,n=8/view=transpose");  // 16 elements too, but later
  more_baseline.push_back(false);
  const Blocks blocks = blocks_of(more, more_baseline);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0], (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(blocks[1], (std::vector<std::size_t>{8}));
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
