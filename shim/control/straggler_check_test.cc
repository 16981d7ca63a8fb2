// The straggler check's owner (straggler_check.h): its judge's lines, what
// it asks of the job machine for a node named, failure.json's "slow" and the
// metrics, at the root and elsewhere; unattached to links, its looks do
// nothing.
#include "shim/control/straggler_check.h"

#include <gtest/gtest.h>

#include "shim/base/log.h"
#include "shim/control/pace/pace_test_util.h"

namespace aml {
namespace {

std::vector<std::string> g_lines;
void Keep(const std::string& line) { g_lines.push_back(line); }

// 3 nodes of one rank, steps of 100 ms; `late` enters each of the look's 30
// collectives 40 ms after the others.
PaceSample Look(int64_t look, int late) {
  return MakeLook(
      look, 3, 1, (look - 1) * 30 + 1, 30,
      [late](int shim, int, int64_t s) { return 1.8e9 + s * 0.1 + (shim == late ? 0.04 : 0); },
      [](int) { return 0.0; }, 0.0005);
}

std::string Host(int shim) { return "h" + std::to_string(shim); }

struct Check : ::testing::Test {
  void SetUp() override {
    g_lines.clear();
    SetLogSink(Keep);
  }
  void TearDown() override { SetLogSink(nullptr); }
};

TEST_F(Check, ANodeLateInThreeLooksIsNamedOnceAndTheJobMachineAskedOnce) {
  StragglerCheck check(1);
  std::vector<int> asked;
  for (int look = 1; look <= 4; ++look)
    check.Judge(Look(look, 2), 3, Host, [&](const SlowNode& n) {
      asked.push_back(n.shim);
      return true;
    });
  EXPECT_EQ(asked, std::vector<int>{2});
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find("h2 (shim 2) is slow"), std::string::npos) << g_lines[0];
  EXPECT_EQ(check.SlowJson(Host).rfind("[{\"host\":\"h2\",\"shim\":2,", 0), 0u)
      << check.SlowJson(Host);
  // A node retired is judged no more: nothing is named, "slow" is empty.
  check.Forget(2);
  EXPECT_EQ(check.SlowJson(Host), "");
}

TEST_F(Check, TheRootsMetricsNameTheNodeAndAnotherShimsSayItsLooksAlone) {
  StragglerCheck check(1);
  for (int look = 1; look <= 3; ++look)
    check.Judge(Look(look, 1), 3, Host, [](const SlowNode&) { return true; });
  PromText root;
  check.AppendMetrics(&root, true, Host);
  EXPECT_NE(root.str().find("aml_shim_straggler_named{node=\"h1\",shim=\"1\"} 1"),
            std::string::npos)
      << root.str();
  EXPECT_NE(root.str().find("aml_shim_straggler_collectives_judged_total 90"), std::string::npos)
      << root.str();
  PromText other;
  check.AppendMetrics(&other, false, Host);
  EXPECT_NE(other.str().find("aml_shim_straggler_looks_total 0"), std::string::npos)
      << other.str();
  EXPECT_EQ(other.str().find("aml_shim_straggler_named"), std::string::npos) << other.str();
}

TEST_F(Check, UnattachedItsLooksDoNothing) {
  StragglerCheck check(1);
  check.Start(0);
  check.OnTimer(100, true);
  EXPECT_EQ(check.NextDeadline(7, true), 7);
  EXPECT_EQ(check.sent(), 0);
  EXPECT_EQ(check.dropped(), 0);
}

}  // namespace
}  // namespace aml
