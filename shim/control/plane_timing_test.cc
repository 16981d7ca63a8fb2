#include "shim/control/plane_timing.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(PlaneTiming, TheBeatIsATenthOfTheHangTimeoutWithinItsBounds) {
  EXPECT_EQ(TimingOf(std::nullopt, true).beat_s, 1.0);
  EXPECT_EQ(TimingOf(5.0, false).beat_s, 0.5);
  EXPECT_EQ(TimingOf(1.0, false).beat_s, 0.25);
  EXPECT_EQ(TimingOf(600.0, false).beat_s, 1.0);
  EXPECT_EQ(TimingOf(600.0, false).startup_s, 30);
}

TEST(PlaneTiming, RecordsAreLookedAtEveryThirdOfTheHangTimeoutWithTheRecorderOnly) {
  EXPECT_EQ(TimingOf(15.0, true).look_every_s, 5.0);
  EXPECT_EQ(TimingOf(15.0, false).look_every_s, 0);
  EXPECT_EQ(TimingOf(std::nullopt, true).look_every_s, 0);
}

}  // namespace
}  // namespace aml
