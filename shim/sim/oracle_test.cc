#include "shim/sim/oracle.h"

#include <random>

#include <gtest/gtest.h>

#include "shim/sim/sim_check.h"

namespace aml {
namespace {

FaultPlan Plan(const std::string& spec, int shims) {
  std::mt19937_64 rng(1);
  auto p = MakeFaultPlan(spec, shims, &rng);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : FaultPlan{};
}

// A star: every shim under rank 0.
OracleSetup Star(int shims) {
  OracleSetup o;
  o.parent.assign(static_cast<size_t>(shims), 0);
  o.parent[0] = -1;
  return o;
}

TEST(Oracle, AFailureEndsEveryShimWithItsStatusNamingTheEarliest) {
  const auto ways = Foresee(Plan("fail@12:3,fail@12.001:2", 4), Star(4));
  ASSERT_EQ(ways.size(), 1u);
  const Foreseen& f = ways[0];
  EXPECT_EQ(f.code, 7);
  for (uint8_t bits : f.codes) EXPECT_EQ(bits, kExit7);
  ASSERT_EQ(f.ended.size(), 1u);
  EXPECT_EQ(f.ended[0].ranks, std::set<int>{3});
  ASSERT_EQ(f.halts.size(), 1u);
  EXPECT_EQ(f.halts[0].first, 12);  // the ranks are ordered ended at once
  EXPECT_GE(f.decided_lo, 12.1);    // the verdict after the window
}

TEST(Oracle, AFrozenShimIsFoundAfterFiveSecondsOfSilenceOrWhenStartUpEnds) {
  // Steady: 5 s after its last frame (a beat before the freeze, at most).
  auto steady = Foresee(Plan("freeze@40:2", 4), Star(4));
  ASSERT_EQ(steady.size(), 1u);
  EXPECT_EQ(steady[0].code, 125);
  EXPECT_EQ(steady[0].lost, std::set<int>{2});
  EXPECT_NEAR(steady[0].decided_lo, 44, 0.1);
  EXPECT_LE(steady[0].decided_hi, 45 + 1);
  EXPECT_EQ(steady[0].codes[2], kNoExit);
  // In the first 30 s, at 30 s.
  auto early = Foresee(Plan("freeze@3:2", 4), Star(4));
  ASSERT_FALSE(early.empty());
  for (const Foreseen& f : early) EXPECT_GE(f.decided_lo, 29.9);
}

TEST(Oracle, OverlappingWindowsAllowEitherOutcome) {
  // A kill (found at once) a moment after a failure: either comes first.
  const auto ways = Foresee(Plan("fail@20:1,kill@20.05:2", 4), Star(4));
  std::set<int> codes;
  for (const Foreseen& f : ways) codes.insert(f.code);
  EXPECT_EQ(codes, (std::set<int>{7, 125}));
}

TEST(Oracle, RestartsFollowTheRuleAndTheBackOff) {
  // Later attempts fail a second in, without progress: restarted once
  // (the first attempt made progress), then the same failure twice.
  const auto ways = Foresee(Plan("fail@10:1,restarts=3(failing)", 3), Star(3));
  ASSERT_EQ(ways.size(), 1u);
  const Foreseen& f = ways[0];
  EXPECT_EQ(f.code, 7);
  EXPECT_EQ(f.restarts, 2);
  EXPECT_EQ(f.refused, "same");
  ASSERT_EQ(f.restart_times.size(), 2u);
  // The second restart follows two short attempts: a back-off of 1 s.
  EXPECT_GE(f.restart_times[1].first, f.restart_times[0].first + 1 + 1);
}

TEST(Oracle, AShimFrozenBeforeTheRollCallIsFoundWhileItWaitsForItsStacks) {
  OracleSetup o = Star(4);
  o.hang_s = 30;
  o.parent = {-1, 0, 1, 1};  // 2 and 3 hang under 1
  // Frozen at 29 s: silent for the roll-call at 30 s (with the shims below
  // it), found lost at 33 s at the latest: the job ends as lost, not hung.
  const auto ways = Foresee(Plan("hang,freeze@29:1", 4), o);
  ASSERT_FALSE(ways.empty());
  for (const Foreseen& f : ways) {
    EXPECT_EQ(f.code, 125) << f.story;
    EXPECT_EQ(f.lost, std::set<int>{1});
  }
}

RunRecord Everyone(int shims, int code) {
  RunRecord r;
  for (int s = 0; s < shims; ++s) {
    ShimRecord x;
    x.exited = true;
    x.code = code;
    x.exit_at = 5.1;
    r.shims.push_back(x);
  }
  return r;
}

TEST(SimCheck, AHealthyRunThatEndsWellPasses) {
  EXPECT_EQ(CheckRun(Plan("none", 3), Star(3), Everyone(3, 0)), "");
}

TEST(SimCheck, AWrongButAgreedOutcomeIsCaught) {
  // Every shim agrees on 125, but nothing was lost: the job should end 0.
  const std::string why = CheckRun(Plan("none", 3), Star(3), Everyone(3, 125));
  EXPECT_NE(why.find("exited 125; expected 0"), std::string::npos) << why;
}

TEST(SimCheck, AShimTooSlowToExitAfterItsStopIsCaught) {
  RunRecord r = Everyone(3, 0);
  r.shims[2].verdict_at = 1;
  r.shims[2].exit_at = 1 + 2 + 1 + 0.5;  // past --grace (2) + 1 s + the latency
  const std::string why = CheckRun(Plan("none", 3), Star(3), r);
  EXPECT_NE(why.find("shim 2 exited"), std::string::npos) << why;
}

}  // namespace
}  // namespace aml
