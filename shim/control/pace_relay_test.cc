#include "shim/control/pace_relay.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

PaceSample Part(int shim, int64_t look) {
  RankTimes r{shim, {{"0", {{1, 1'000'000'000LL + shim * 1'000'000LL}, {2, 2'000'000'000LL + shim * 1'000'000LL}}}}};
  return LocalPace(shim, look, {r}, 0, 0.001);
}

auto kAll = [](int) { return true; };

TEST(PaceRelay, SendsUpOnceItsOwnAndEveryChildsPartCame) {
  PaceRelay r;
  r.Begin(3, {5, 6}, 100);
  r.Own(3, Part(1, 3));
  r.FromChild(5, 3, Part(5, 3));
  EXPECT_FALSE(r.Ready(10, kAll));
  r.FromChild(6, 3, Part(6, 3));
  ASSERT_TRUE(r.Ready(10, kAll));
  PaceSample s = r.Take();
  EXPECT_EQ(s.look, 3);
  EXPECT_EQ(s.shims, 3);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].ops[0].last.shim, 6);
  EXPECT_EQ(s.groups[0].ops[0].next.shim, 5);
  EXPECT_FALSE(r.active());
}

TEST(PaceRelay, AChildLostOrSilentIsLeftOutAndALatePartDropped) {
  PaceRelay r;
  r.Begin(1, {5, 6}, 100);
  r.Own(1, Part(1, 1));
  r.FromChild(5, 1, Part(5, 1));
  EXPECT_TRUE(r.Ready(10, [](int c) { return c != 6; })) << "6 was lost";
  EXPECT_FALSE(r.Ready(10, kAll));
  EXPECT_TRUE(r.Ready(100, kAll)) << "the deadline";
  EXPECT_EQ(r.Take().shims, 2);
  r.FromChild(6, 1, Part(6, 1));  // after its look went up
  r.Begin(2, {5}, 200);
  r.FromChild(5, 1, Part(5, 1));  // an old look's
  r.FromChild(7, 2, Part(7, 2));  // not a child waited for
  EXPECT_EQ(r.dropped(), 3);
}

}  // namespace
}  // namespace aml
