#include "shim/control/liveness.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(Liveness, StartUpAllowsTheLongestSilence) {
  Liveness l;
  l.Start(100);
  EXPECT_EQ(l.Allowance(110, 130), kMaxSilenceS);
  EXPECT_EQ(l.LostAt(110, 130), 100 + kMaxSilenceS);
}

TEST(Liveness, ASteadyLinkIsLostAfterTheMinimum) {
  Liveness l;
  l.Start(0);
  for (double t = 1; t <= 60; t += 1) l.Heard(t);
  EXPECT_EQ(l.Allowance(60, 30), kMinSilenceS);
  EXPECT_EQ(l.LostAt(60, 30), 65);
}

TEST(Liveness, ALateBeatWidensTheAllowanceThenFades) {
  Liveness l;
  l.Start(0.5);
  l.Heard(1);
  l.Heard(4);  // a 3 s gap: 12 s of room
  EXPECT_DOUBLE_EQ(l.Allowance(4, 0), 12);
  for (double t = 5; t < 40; t += 1) l.Heard(t);
  EXPECT_EQ(l.Allowance(40, 0), kMinSilenceS);
}

TEST(Liveness, TheAllowanceIsCapped) {
  Liveness l;
  l.Start(1);
  l.Heard(21);
  EXPECT_EQ(l.Allowance(21, 0), kMaxSilenceS);
}

}  // namespace
}  // namespace aml
