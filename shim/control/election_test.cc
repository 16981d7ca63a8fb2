// A heir's election clock and record (election.h).
#include "shim/control/election.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(Election, ASilentRootIsWaitedOutEvenWhenEveryShimIsIn) {
  Election e;
  e.Begin(true, 40, 62);
  EXPECT_EQ(e.Deadline(true), 40 + kMaxSilenceS + 1) << "an old root alive must find the cut";
  EXPECT_EQ(e.Deadline(false), 102);
  // A shim that found the root silent later: the old root finds its side
  // lost within its allowance of that shim's last frame.
  e.Silent(80);
  EXPECT_EQ(e.Deadline(true), 80 + kMaxSilenceS + 1);
  EXPECT_EQ(e.Deadline(false), 80 + kMaxSilenceS + 1);
  EXPECT_TRUE(e.root_silent());
}

TEST(Election, AClosedRootsElectionEndsOnceEveryShimIsIn) {
  Election e;
  e.Begin(false, 40, 62);
  EXPECT_EQ(e.Deadline(true), 40);
  EXPECT_EQ(e.Deadline(false), 102);
  EXPECT_FALSE(e.root_silent());
}

TEST(Election, ANewRecordForgetsTheLossesSaidBeforeIt) {
  Election e;
  e.Record("r1");
  e.Gone("g1");
  e.Record("r2");
  e.Gone("g2");
  EXPECT_EQ(e.record(), "r2");
  EXPECT_EQ(e.gone_notes(), std::vector<std::string>{"g2"});
  EXPECT_EQ(e.lost_root(), -1);
  e.TakePlaceOf(0);
  EXPECT_EQ(e.lost_root(), 0);
}

// The root's side: a child lost alive that was never its heir leaves no
// cut to wait for; a heir lost alive does, for kMaxSilenceS and a second.
TEST(HeirWatch, AHeirLostAliveKeepsTheCutUnsettledForTheLongestAllowance) {
  HeirWatch w;
  w.Named(1);
  w.LostAlive(2, 10);  // not a heir
  EXPECT_FALSE(w.CutUnsettled(10));
  w.LostAlive(1, 20);
  EXPECT_TRUE(w.CutUnsettled(20));
  EXPECT_TRUE(w.CutUnsettled(20 + kMaxSilenceS + 0.9));
  EXPECT_FALSE(w.CutUnsettled(20 + kMaxSilenceS + 1));
  EXPECT_EQ(w.CutFoundAt(), 20 + kMaxSilenceS + 1);
}

// Shims 1 and 2 are the root's children (1 its heir), 3-5 below 1, 6 below
// 2: of 7 shims, the heir's side of a cut is 1, 3-5 (4: more than half)
// once 1 was lost alive, and with 2 too; without 1 among them, none.
TEST(HeirWatch, AHeirMayHoldTheJobOnlyWithMoreThanHalfOnItsSide) {
  auto below = [](int c) {
    return c == 1 ? std::vector<int>{3, 4, 5} : c == 2 ? std::vector<int>{6} : std::vector<int>{};
  };
  HeirWatch w;
  w.Named(1);
  EXPECT_FALSE(w.HeirMayHold(7, true, below));
  w.LostAlive(2, 5);
  EXPECT_FALSE(w.HeirMayHold(7, true, below));  // 2 was never a heir
  w.LostAlive(1, 6);
  EXPECT_TRUE(w.HeirMayHold(7, true, below));   // 1-6: 6 of 7
  EXPECT_FALSE(w.HeirMayHold(12, true, below));  // 6 of 12: half is not more
  EXPECT_TRUE(w.HeirMayHold(11, true, below));
  HeirWatch alone;
  alone.Named(1);
  alone.LostAlive(1, 6);
  EXPECT_FALSE(alone.HeirMayHold(8, true, below));  // 1, 3-5: 4 of 8
  EXPECT_TRUE(alone.HeirMayHold(7, true, below));   // 4 of 7
  EXPECT_TRUE(alone.HeirMayHold(100, false, below));  // no tree: it could
}

}  // namespace
}  // namespace aml
