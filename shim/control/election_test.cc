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

}  // namespace
}  // namespace aml
