#include "shim/sim/sim_cluster.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

SimResult Simulate(int shims, uint64_t seed, const std::string& faults) {
  SimOptions o;
  o.shims = shims;
  o.seed = seed;
  o.faults = faults;
  auto r = RunSim(o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : SimResult{};
}

std::string WithoutWall(SimResult r) {
  r.wall_s = 0;
  return r.Json();
}

TEST(PlaneSim, AHealthyJobJoinsAndEndsWell) {
  SimResult r = Simulate(300, 1, "none");
  EXPECT_EQ(r.invariants, "ok");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GT(r.join_s, 0);
  EXPECT_EQ(r.depth, 2);  // 300 shims, fan-out 32
}

TEST(PlaneSim, TheSameSeedReplaysTheSameRun) {
  EXPECT_EQ(WithoutWall(Simulate(200, 7, "random")), WithoutWall(Simulate(200, 7, "random")));
}

TEST(PlaneSim, AFailureStopsEveryShimWithItsStatus) {
  SimResult r = Simulate(500, 3, "fail");
  EXPECT_EQ(r.invariants, "ok");
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_GT(r.stop_max_s, 0);
}

TEST(PlaneSim, AFrozenShimACutLinkAndAKilledShimAreFoundAndEndTheJob) {
  for (const char* f : {"freeze", "cut", "kill"}) {
    SimResult r = Simulate(100, 5, f);
    EXPECT_EQ(r.invariants, "ok") << f;
    EXPECT_EQ(r.exit_code, 125) << f;
    EXPECT_GT(r.lost_detect_s, 0) << f;
  }
}

TEST(PlaneSim, AHungJobGetsItsRollCall) {
  SimResult r = Simulate(100, 2, "hang");
  EXPECT_EQ(r.invariants, "ok");
  EXPECT_EQ(r.exit_code, 124);
  EXPECT_GE(r.rollcall_s, 0);
}

TEST(PlaneSim, AFailureIsRestartedOnceAndTheJobEndsWell) {
  SimResult r = Simulate(100, 4, "restart");
  EXPECT_EQ(r.invariants, "ok");
  EXPECT_EQ(r.restarts, 1);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GT(r.restart_round_s, 0);
}

TEST(PlaneSim, ASigtermEndsTheJobWithItsStatus) {
  SimResult r = Simulate(100, 6, "sigterm");
  EXPECT_EQ(r.invariants, "ok");
  EXPECT_EQ(r.exit_code, 143);
}

TEST(PlaneSim, ABadFaultSpecIsRefusedWithItsName) {
  SimOptions o;
  o.shims = 4;
  o.faults = "melt@3";
  auto r = RunSim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'melt@3'"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace aml
