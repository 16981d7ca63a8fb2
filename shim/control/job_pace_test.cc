// The root's straggler verdicts (job_pace.cc): a look's merged sample names
// a slow node, and with --retire-slow retires it for a spare.
#include <gtest/gtest.h>

#include <algorithm>

#include "shim/control/pace/pace_test_util.h"
#include "shim/base/log.h"
#include "shim/control/fake_job_ports.h"
#include "shim/control/job_machine.h"

namespace aml {
namespace {

std::vector<std::string> g_lines;
void Keep(const std::string& line) { g_lines.push_back(line); }

// 4 shims; those in `ranks_on` run `per_node` ranks each (shim s ranks
// s * per_node + i; the others, a spare or a node retired, send an empty
// part): rank `late` enters each collective 40 ms after the others, whose
// step is 100 ms.
PaceSample Look(int64_t look, int late, std::vector<int> ranks_on = {0, 1, 2}, int per_node = 1) {
  const int64_t seq0 = (look - 1) * 30 + 1;
  PaceSample all;
  all.look = look;
  for (int shim = 0; shim < 4; ++shim) {
    std::vector<RankTimes> ranks;
    if (std::find(ranks_on.begin(), ranks_on.end(), shim) != ranks_on.end()) {
      for (int rank = shim * per_node; rank < (shim + 1) * per_node; ++rank) {
        RankTimes r{rank, {{"0", {}}}};
        for (int64_t q = seq0; q < seq0 + 30; ++q)
          r.groups[0].ops.emplace_back(
              q, static_cast<int64_t>((1.8e9 + q * 0.14 + (rank == late ? 0.04 : 0.0)) * 1e9));
        ranks.push_back(r);
      }
    }
    MergePace(&all, LocalPace(shim, look, ranks, 0, 0.0005));
  }
  return all;
}

struct JobPace : ::testing::Test {
  void SetUp() override {
    g_lines.clear();
    SetLogSink(Keep);
  }
  void TearDown() override { SetLogSink(nullptr); }
};

JobConfig Config(bool retire) {
  JobConfig c = TestConfig(0, 4, 3, 1);
  c.pace_every_s = 5;
  c.retire_slow = retire;
  return c;
}

TEST_F(JobPace, ASlowNodeIsNamedOnceInOneLine) {
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobMachine m(Config(false), &ports);
  m.NoteHost(2, "h2");
  m.Start(0);
  for (int look = 1; look <= 5; ++look) m.OnPaceSample(Look(look, 2), 5.0 * look);
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find("aml-shim: warning: h2 (shim 2) is slow: its ranks entered 30 of 30 "
                            "collectives last, 0.040 s late on average (rank 2 last; 100 % of "
                            "the job's waiting); the job waits 17.1 s per minute for it (3 looks "
                            "in a row)"),
            std::string::npos)
      << g_lines[0];
  EXPECT_EQ(m.state(), JobState::kRunning) << "without --retire-slow it only says so";
  EXPECT_TRUE(m.straggler().judge().nodes().at(2).named);
  // Itself again: said once.
  m.OnPaceSample(Look(6, -1), 30);
  ASSERT_EQ(g_lines.size(), 2u);
  EXPECT_NE(g_lines[1].find("h2 (shim 2) is no longer slow"), std::string::npos) << g_lines[1];
}

TEST_F(JobPace, AJobWhoseRecordsHoldNoTimesIsToldSoOnce) {
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobMachine m(Config(false), &ports);
  m.Start(0);
  for (int look = 1; look <= 5; ++look) {
    PaceSample empty;
    empty.look = look;
    empty.shims = 4;
    m.OnPaceSample(empty, 5.0 * look);
  }
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_NE(g_lines[0].find("--straggler-check: 3 looks found no collective"), std::string::npos)
      << g_lines[0];
}

TEST_F(JobPace, AJobThatFailsAfterANodeWasNamedSaysSoInFailureJson) {
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobConfig c = TestConfig(0, 3);
  c.pace_every_s = 5;
  JobMachine m(c, &ports);
  m.NoteHost(1, "h1");
  m.Start(0);
  for (int look = 1; look <= 3; ++look) {
    PaceSample s = MakeLook(
        look, 3, 1, (look - 1) * 30 + 1, 30,
        [](int shim, int, int64_t q) { return 1.8e9 + q * 0.14 + (shim == 1 ? 0.04 : 0.0); },
        [](int) { return 0.0; }, 0.0005);
    m.OnPaceSample(s, 5.0 * look);
  }
  Msg fail("fail");
  fail.SetNumber("time", 1.8e9).Set("rank", 2).Set("node", 2).Set("code", 7).Set("shim", 2);
  fail.Set("host", "h2").Set("status", "exited with status 7").Set("summary", "s\n");
  FromChild(&m, fail.Set("json", "{}"), 20);
  m.OnTimer(40);
  std::optional<StopOrder> stop = LastOf<StopOrder>(&m);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->slow_json.rfind("[{\"host\":\"h1\",\"shim\":1,\"rank\":1,", 0), 0u)
      << stop->slow_json;
}

TEST_F(JobPace, RetireSlowEndsTheAttemptAndTheSpareTakesTheNodeRank) {
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobMachine m(Config(true), &ports);
  m.NoteHost(2, "h2");
  m.NoteHost(3, "h3", "10.0.0.3");
  m.Start(0);
  for (int look = 1; look <= 3; ++look) m.OnPaceSample(Look(look, 2), 5.0 * look);
  EXPECT_EQ(m.state(), JobState::kEnding);
  EXPECT_EQ(ports.down.back().type(), "end");
  ASSERT_TRUE(m.roster()->Retired(2));
  EXPECT_NE(m.roster()->RetiredText().find("named slow: its ranks entered 30 of 30 collectives "
                                           "last in 3 looks in a row"),
            std::string::npos)
      << m.roster()->RetiredText();
  // The round ends: the restart moves NODE_RANK 2 to the spare.
  m.OnChildrenDone({0, 0}, 16);
  for (int s : {1, 2, 3}) {
    Msg ended("ended");
    FromChild(&m, ended.Set("shim", s).SetNumber("out", 0), 16);
  }
  m.OnTimer(40);
  const Msg* restart = nullptr;
  for (const Msg& d : ports.down)
    if (d.type() == "restart") restart = &d;
  ASSERT_NE(restart, nullptr);
  EXPECT_NE(restart->Str("line").find("restart 1 of 3 after rank 2's shim on h2 was slow and "
                                      "retired (--retire-slow)"),
            std::string::npos)
      << restart->Str("line");
  EXPECT_NE(restart->Str("line").find("NODE_RANK 2 moves to rank 3's shim on h3"),
            std::string::npos)
      << restart->Str("line");
  // The next attempt's looks: the retired node is not judged again.
  m.OnPaceSample(Look(1, -1), 50);
  EXPECT_EQ(m.straggler().judge().nodes().count(2), 0u);
  // The spare, now NODE_RANK 2, is as slow: the slowness follows the
  // ranks' work, and it is not retired in turn.
  g_lines.clear();
  for (int look = 2; look <= 4; ++look)
    m.OnPaceSample(Look(look, 3, {0, 1, 3}), 50 + 5.0 * look);
  EXPECT_EQ(m.state(), JobState::kRunning);
  EXPECT_FALSE(m.roster()->Retired(3));
  ASSERT_EQ(g_lines.size(), 3u);
  EXPECT_NE(g_lines[1].find("holds NODE_RANK 2, whose last holder was retired as slow too"),
            std::string::npos)
      << g_lines[1];
  // The node retired first was healthy: it is a spare again, and the
  // job's record says so (before, it stayed retired).
  EXPECT_NE(g_lines[2].find("--retire-slow: rank 2's shim on h2, retired as slow, is given back "
                            "as a spare: NODE_RANK 2's lateness followed its ranks to rank 3's "
                            "shim on h3 (their own work, not the node)"),
            std::string::npos)
      << g_lines[2];
  EXPECT_FALSE(m.roster()->Retired(2));
  EXPECT_EQ(m.roster()->Spares(), std::vector<int>{2});
  EXPECT_NE(m.roster()->RetiredJson().find("\"given_back\":\"NODE_RANK 2's lateness followed"),
            std::string::npos)
      << m.roster()->RetiredJson();
  EXPECT_NE(m.roster()->RetiredText().find("; given back as a spare: "), std::string::npos);
  // Named a third time: nothing more is retired or given back.
  g_lines.clear();
  for (int look = 5; look <= 8; ++look)
    m.OnPaceSample(Look(look, 3, {0, 1, 3}), 50 + 5.0 * look);
  EXPECT_EQ(m.state(), JobState::kRunning);
  EXPECT_FALSE(m.roster()->Retired(3));
  EXPECT_EQ(m.roster()->Spares(), std::vector<int>{2});
}

// Two ranks a node, rank 4 (shim 2's first) 40 ms late in every step and
// its node's other rank on time: named as rank 4's lateness, and with
// --retire-slow its node's retirement is said to be the test of which.
TEST_F(JobPace, ALatenessThatIsOneRanksIsSaidSoAndItsRetirementIsATest) {
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobConfig c = Config(true);
  c.ranks_per_node = 2;
  JobMachine m(c, &ports);
  m.NoteHost(2, "h2");
  m.NoteHost(3, "h3");
  m.Start(0);
  for (int look = 1; look <= 3; ++look)
    m.OnPaceSample(Look(look, 4, {0, 1, 2}, 2), 5.0 * look);
  ASSERT_EQ(g_lines.size(), 2u);
  EXPECT_NE(g_lines[0].find("rank 4 on h2 (shim 2) is late: it entered 30 of 30 collectives last"),
            std::string::npos)
      << g_lines[0];
  EXPECT_NE(g_lines[1].find("--retire-slow: the lateness is rank 4's alone: retiring rank 2's "
                            "shim on h2 tells its node from its own work: should NODE_RANK 2's "
                            "next holder be late the same way, the work is the rank's, and h2 is "
                            "given back as a spare"),
            std::string::npos)
      << g_lines[1];
  EXPECT_TRUE(m.roster()->Retired(2));
  EXPECT_EQ(m.state(), JobState::kEnding);
}

}  // namespace
}  // namespace aml
