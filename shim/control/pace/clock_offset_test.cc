#include "shim/control/pace/clock_offset.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

// One exchange with a host whose clock is `skew` ahead, `up` and `down`
// seconds on the wire each way, `held` there: t1 at `at`.
void Exchange(ClockOffset* c, double at, double skew, double up, double down, double held) {
  const double t1 = at, t2 = at + up + skew, t3 = t2 + held, t4 = at + up + held + down;
  c->Exchange(t1, t2, t3, t4);
}

TEST(ClockOffset, IsWithinHalfTheRoundTripWhateverTheAsymmetry) {
  for (double up : {0.0001, 0.004, 0.02}) {
    ClockOffset c;
    Exchange(&c, 1000, 0.75, up, 0.001, 0.3);
    ASSERT_TRUE(c.known());
    EXPECT_LE(std::abs(c.offset() - 0.75), c.bound() + 1e-9) << up;
    EXPECT_NEAR(c.bound(), (up + 0.001) / 2, 1e-9);
  }
}

TEST(ClockOffset, KeepsTheExchangeWithTheShortestRoundTrip) {
  ClockOffset c;
  Exchange(&c, 1000, -2.5, 0.050, 0.001, 0.1);  // a slow path up: off by 25 ms
  Exchange(&c, 1001, -2.5, 0.0002, 0.0002, 0.1);
  Exchange(&c, 1002, -2.5, 0.030, 0.020, 0.1);
  EXPECT_NEAR(c.offset(), -2.5, 1e-9);
  EXPECT_NEAR(c.bound(), 0.0002, 1e-9);
  // The window moves on: the best falls out after kWindow others.
  for (int k = 0; k < ClockOffset::kWindow; ++k) Exchange(&c, 1003 + k, -2.5, 0.01, 0.01, 0.1);
  EXPECT_NEAR(c.bound(), 0.01, 1e-9);
}

TEST(ClockOffset, IgnoresAnExchangeThatContradictsItself) {
  ClockOffset c;
  c.Exchange(10, 5, 4, 11);   // answered before it came
  c.Exchange(10, 5, 6, 9);    // came back before it left
  c.Exchange(10, 0, 0, 11);   // a beat down that lacked its times
  EXPECT_FALSE(c.known());
}

TEST(ClockOffset, ComposesToTheRootAndItsBoundsAdd) {
  ClockOffset to_parent;
  Exchange(&to_parent, 50, 0.2, 0.001, 0.001, 0.0);
  RootClock parent{true, -0.5, 0.003};
  RootClock r = ComposeRootClock(to_parent, parent);
  ASSERT_TRUE(r.known);
  EXPECT_NEAR(r.offset, -0.3, 1e-9);
  EXPECT_NEAR(r.bound, 0.004, 1e-9);
  EXPECT_FALSE(ComposeRootClock(ClockOffset(), parent).known);
  EXPECT_FALSE(ComposeRootClock(to_parent, RootClock()).known);
}

}  // namespace
}  // namespace aml
