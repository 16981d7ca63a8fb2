#include "launch/warm_slots.h"

#include <limits>

#include <gtest/gtest.h>

namespace aml {
namespace {

// Issue 64: a rank failing 1 s after its first step (7 s in) started cold:
// its standby was made only 10 s after the attempt's start. In the idle
// class it is made at once, whatever the moment of the failure.
TEST(WarmSlots, AStandbyIsMadeAsSoonAsItsRankStarted) {
  WarmSlots w;
  w.Due(0, true, 100);
  EXPECT_EQ(w.NextDeadline(), 100);
  EXPECT_EQ(w.Ready(100), std::vector<size_t>{0});
  w.Made(0);
  EXPECT_TRUE(w.live(0));
  std::string why;
  EXPECT_TRUE(w.Take(0, &why));
  EXPECT_FALSE(w.live(0)) << "taken: the slot has none after";
}

TEST(WarmSlots, ARestartsNextStandbyIsDueAsTheRestartIsUnderWay) {
  WarmSlots w;
  w.Due(0, true, 0);
  ASSERT_EQ(w.Ready(0).size(), 1u);
  w.Made(0);
  std::string why;
  ASSERT_TRUE(w.Take(0, &why));  // the restart: its rank from the standby
  w.Due(0, true, 7);             // and the next one due at once
  EXPECT_EQ(w.Ready(7), std::vector<size_t>{0});
}

TEST(WarmSlots, ASparesStandbyIsReadyAsSoonAsTheSpare) {
  WarmSlots w;
  w.Due(1, false, 0);
  EXPECT_EQ(w.Ready(0), std::vector<size_t>{1});
}

TEST(WarmSlots, LateAStandbyIsMadeAfterTheRanksStartUp) {
  WarmSlots w;
  w.Late(true);
  w.Due(0, true, 100);
  EXPECT_EQ(w.NextDeadline(), 100 + WarmSlots::kAfterS);
  EXPECT_TRUE(w.Ready(105).empty()) << "not beside the ranks' own start-up";
  EXPECT_EQ(w.Ready(110), std::vector<size_t>{0});
}

// Found by the simulator (tests/sim/regressions.txt, seed 483010935): a
// failing job restarted every 5 s; each restart put the spare's standby off
// by another 10 s, so the spare that took a node's place at 15 s started
// cold though its standby had been due at 10 s.
TEST(WarmSlots, LateTheJobsRestartsDoNotPutOffASparesStandby) {
  WarmSlots w;
  w.Late(true);
  w.Due(0, false, 0);
  w.Due(0, false, 4.7);  // the job restarted: still a spare, no rank here
  w.Due(0, false, 9.7);
  EXPECT_EQ(w.NextDeadline(), WarmSlots::kAfterS);
  EXPECT_EQ(w.Ready(WarmSlots::kAfterS), std::vector<size_t>{0});
}

TEST(WarmSlots, LateARanksRestartPutsItsStandbyOffBeyondItsNewStartUp) {
  WarmSlots w;
  w.Late(true);
  w.Due(0, true, 0);
  w.Due(0, true, 5);  // restarted (cold) before its standby was made
  EXPECT_EQ(w.NextDeadline(), 5 + WarmSlots::kAfterS);
}

TEST(WarmSlots, LateARestartBeforeTheStandbyIsMadeStartsColdAndSaysWhy) {
  WarmSlots w;
  w.Late(true);
  w.Due(0, true, 0);
  std::string why;
  EXPECT_FALSE(w.Take(0, &why));
  EXPECT_NE(why.find("not started yet"), std::string::npos) << why;
  EXPECT_NE(why.find("idle scheduling class"), std::string::npos) << why;
  EXPECT_EQ(w.NextDeadline(), std::numeric_limits<double>::infinity()) << "none is due after";
}

TEST(WarmSlots, AStandbyThatEndedIsAColdStartWithItsReasonOnce) {
  WarmSlots w;
  w.Due(0, false, 0);
  ASSERT_EQ(w.Ready(20).size(), 1u);
  w.Made(0);
  w.Gone(0, "its standby (pid 9) ended: killed by SIGKILL");
  std::string why;
  EXPECT_FALSE(w.Take(0, &why));
  EXPECT_EQ(why, "its standby (pid 9) ended: killed by SIGKILL");
  why.clear();
  EXPECT_FALSE(w.Take(0, &why));
  EXPECT_EQ(why, "it has no standby");
}

TEST(WarmSlots, ALiveStandbyIsKeptWhenItsSlotIsDueAgainAndEndedWithTheJob) {
  WarmSlots w;
  w.Due(0, false, 0);
  w.Due(1, false, 0);
  ASSERT_EQ(w.Ready(10).size(), 2u);
  w.Made(0);
  w.Gone(1, "its standby could not start: no such file");
  w.Due(0, false, 30);  // a spare's next round: it keeps the one it has
  EXPECT_EQ(w.NextDeadline(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(w.EndAll(), std::vector<size_t>{0});
  EXPECT_FALSE(w.live(0));
  EXPECT_TRUE(w.EndAll().empty());
}

}  // namespace
}  // namespace aml
