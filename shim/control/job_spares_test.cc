// The job's state machine with --spares (job_spares.cc): rank 0's roster
// over fake ports, frame by frame.
#include <gtest/gtest.h>

#include "shim/control/fake_job_ports.h"
#include "shim/control/job_machine.h"

namespace aml {
namespace {

// A node of the job: its shims below have not all said done.
FakePorts Ports() {
  FakePorts p;
  p.children_done = false;
  p.linked = true;
  return p;
}

// 4 shims, the last a spare, 3 restarts.
JobConfig Config(int rank, int size = 4, int spares = 1) {
  return TestConfig(rank, size, 3, spares);
}

Msg FailFrom(int shim, double wall, int code = 7) {
  Msg m("fail");
  m.SetNumber("time", wall).Set("rank", shim).Set("node", shim).Set("code", code);
  m.Set("shim", shim).Set("host", "h" + std::to_string(shim));
  m.Set("status", "exited with status " + std::to_string(code));
  m.Set("summary", "remote summary\n").Set("json", "{}");
  return m;
}

Msg Ended(int shim) {
  Msg m("ended");
  m.Set("shim", shim).SetNumber("out", 0);
  return m;
}

// Rank 0's round after a failure: its own ranks and every shim in `shims` ended.
void EndRound(JobMachine* m, const std::vector<int>& shims, double now) {
  m->OnChildrenDone({0, 0}, now);
  for (int s : shims) FromChild(m, Ended(s), now);
}

TEST(JobSpares, ASpareWaitsAndLeavesOnlyWhenTheJobEndedWell) {
  FakePorts ports = Ports();
  JobMachine spare(Config(3), &ports);
  EXPECT_EQ(spare.node(), -1);
  spare.Start(0);
  spare.OnChildrenDone({0, 0}, 0.1);  // no ranks
  ports.children_done = true, ports.linked = false;
  spare.OnTimer(10);
  EXPECT_TRUE(ports.up.empty());  // neither "well" nor "done"
  EXPECT_FALSE(spare.MayExit(10));
  FromParent(&spare, Msg("finish"), 11);
  ASSERT_EQ(Types(ports.up), (std::vector<std::string>{"done"}));
  EXPECT_EQ(spare.state(), JobState::kDone);
}

TEST(JobSpares, AHolderSaysWellAndStaysUntilFinish) {
  FakePorts ports = Ports();
  ports.children_done = true, ports.linked = false;
  JobMachine m(Config(2), &ports);
  m.Start(0);
  m.OnChildrenDone({0, 0}, 5);
  ASSERT_EQ(Types(ports.up), (std::vector<std::string>{"well"}));
  EXPECT_EQ(ports.up[0].Int("shim"), 2);
  EXPECT_FALSE(m.MayExit(20));
  FromParent(&m, Msg("finish"), 21);
  EXPECT_EQ(ports.up.back().type(), "done");
}

TEST(JobSpares, RankZeroFinishesWhenEveryNodeRankEndedWell) {
  FakePorts ports = Ports();
  JobMachine m(Config(0), &ports);
  m.Start(0);
  m.OnChildrenDone({0, 0}, 5);
  Msg well("well");
  FromChild(&m, well.Set("shim", 1), 5);
  EXPECT_TRUE(ports.down.empty());
  FromChild(&m, Msg("well").Set("shim", 3), 5);  // a spare's word does not count
  EXPECT_TRUE(ports.down.empty());
  FromChild(&m, Msg("well").Set("shim", 2), 5.1);
  ASSERT_EQ(Types(ports.down), (std::vector<std::string>{"finish"}));
  EXPECT_FALSE(m.MayExit(5.2));  // the others still say done
  ports.children_done = true, ports.linked = false;
  EXPECT_TRUE(m.MayExit(5.3));
}

TEST(JobSpares, ALostNodeIsRetiredAndTheSpareTakesItsNodeRank) {
  FakePorts ports = Ports();
  JobMachine m(Config(0), &ports);
  m.NoteHost(3, "h3", "10.0.0.3");
  m.Start(0);
  m.OnShimLost(1, "the control plane lost rank 1's shim on h1 (closed)", false, 10);
  EXPECT_EQ(m.state(), JobState::kDeciding);
  EXPECT_EQ(ports.down.back().type(), "halt");
  m.OnTimer(10 + kFailWindowS);
  EXPECT_EQ(m.state(), JobState::kEnding);
  EndRound(&m, {2, 3}, 11);  // shim 1 is gone: not waited for
  EXPECT_EQ(m.state(), JobState::kRunning) << JobStateName(m.state());
  const Msg& restart = ports.down.back();
  ASSERT_EQ(restart.type(), "restart");
  EXPECT_EQ(restart.Str("nodes"), "0,3,2");
  EXPECT_EQ(restart.Str("maddr"), "");  // NODE_RANK 0 stays with rank 0
  EXPECT_NE(restart.Str("line").find("NODE_RANK 1 moves to rank 3's shim on h3 (a spare)"),
            std::string::npos)
      << restart.Str("line");
  ASSERT_EQ(m.roster()->retirements().size(), 1u);
  EXPECT_EQ(m.roster()->retirements()[0].node, 1);
}

TEST(JobSpares, TheSpareTakesItsPlaceInTheRestartOrder) {
  FakePorts ports = Ports();
  JobMachine spare(Config(3), &ports);
  spare.Start(0);
  Msg restart("restart");
  restart.Set("n", 1).Set("port", 5000).Set("line", "x\n").Set("nodes", "0,3,2");
  restart.Set("maddr", "");
  FromParent(&spare, restart, 12);
  EXPECT_EQ(spare.node(), 1);
  std::optional<RestartOrder> o = LastOf<RestartOrder>(&spare);
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->roster);
  EXPECT_EQ(o->node_rank, 1);
  // And a holder retired to standby.
  FakePorts p1 = Ports();
  JobMachine retired(Config(1), &p1);
  retired.Start(0);
  FromParent(&retired, restart, 12);
  EXPECT_EQ(retired.node(), -1);
}

TEST(JobSpares, ANodeThatFailsFirstTwiceInARowIsRetired) {
  FakePorts ports = Ports();
  JobMachine m(Config(0), &ports);
  m.NoteHost(2, "h2");
  m.NoteHost(3, "h3", "10.0.0.3");
  m.Start(0);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const double t = attempt * 100;
    FromChild(&m, FailFrom(2, 1000 + t), t);
    m.OnTimer(t + kFailWindowS);
    ASSERT_EQ(m.state(), JobState::kEnding);
    EndRound(&m, {1, 2, 3}, t + 1);
    ASSERT_EQ(m.state(), JobState::kRunning);
    EXPECT_EQ(ports.down.back().Str("nodes"), attempt == 1 ? "0-2" : "0-1,3");
  }
  ASSERT_EQ(m.roster()->retirements().size(), 1u);
  EXPECT_EQ(m.roster()->retirements()[0].reason,
            "its ranks failed first in 2 attempts in a row (1 to 2; last: rank 2 (exited with "
            "status 7))");
}

// The roll-call's stacks from shim `shim` (its one rank, no flight record).
Msg StacksFrom(int shim) {
  Msg m("stacks");
  m.Set("shim", shim).Set("node", shim).Set("host", "h" + std::to_string(shim));
  m.SetRaw("stacks", "[{\"rank\":" + std::to_string(shim) + ",\"sig\":\"wait (t.py:3)\"}]");
  return m;
}

// Rank 0's hang round: the verdict, every shim's stacks, the restart.
void HangRound(JobMachine* m, FakePorts* ports, double t) {
  m->OnTimer(t);
  ASSERT_EQ(m->state(), JobState::kCollecting);
  while (m->TakeOrder()) {
  }
  m->OnStacks({{0, "x", "wait (t.py:3)"}}, t + 1);
  for (int s : {1, 2, 3}) FromChild(m, StacksFrom(s), t + 1);
  ASSERT_EQ(m->state(), JobState::kEnding) << JobStateName(m->state());
  EndRound(m, {1, 2, 3}, t + 2);
  if (m->state() == JobState::kBackingOff) m->OnTimer(m->NextDeadline(t + 2));
  ASSERT_EQ(m->state(), JobState::kRunning) << JobStateName(m->state());
  EXPECT_EQ(ports->down.back().type(), "restart");
}

TEST(JobSpares, AHangWithNoCulpritBreaksTheStreak) {
  // Node 2 fails first, then the job hangs with no culprit named, then node
  // 2 fails first again: two failures, but not in a row
  // (docs/control-plane.md, "Spares and retirement").
  FakePorts ports = Ports();
  JobConfig c = Config(0);
  c.hang_timeout_s = 50;
  JobMachine m(c, &ports);
  m.NoteHost(2, "h2");
  m.NoteHost(3, "h3", "10.0.0.3");
  m.Start(0);
  FromChild(&m, FailFrom(2, 1010), 10);
  m.OnTimer(10 + kFailWindowS);
  EndRound(&m, {1, 2, 3}, 11);
  ASSERT_EQ(m.state(), JobState::kRunning);
  HangRound(&m, &ports, m.NextDeadline(12));
  const double t = m.NextDeadline(0) - 10;  // before the next hang verdict
  FromChild(&m, FailFrom(2, 1000 + t), t);
  m.OnTimer(t + kFailWindowS);
  ASSERT_EQ(m.state(), JobState::kEnding);
  EXPECT_TRUE(m.roster()->retirements().empty())
      << m.roster()->retirements()[0].reason;
}

TEST(JobSpares, AHangWhoseCulpritIsOnOneNodeRetiresIt) {
  // Every rank of the default group entered all_reduce #6 but shim 2's:
  // the hang is node 2's failure; --retire-after 1 retires it at once.
  FakePorts ports = Ports();
  JobConfig c = Config(0);
  c.hang_timeout_s = 50;
  c.flight_recorder = true;
  c.dump_timeout_s = 10;
  c.retire_after = 1;
  JobMachine m(c, &ports);
  m.NoteHost(2, "h2");
  m.NoteHost(3, "h3", "10.0.0.3");
  m.Start(0);
  auto record = [](int rank, int entered) {
    FrSummary s;
    s.rank = rank;
    FrGroup g;
    g.pg = "0";
    g.desc = "default_pg";
    g.ranks = "0-2";
    g.enqueued = entered;
    g.completed = 5;
    g.last.seq = entered;
    g.last.op = "all_reduce";
    s.groups.push_back(g);
    return s;
  };
  const double t = m.NextDeadline(0);
  m.OnTimer(t);
  ASSERT_EQ(m.state(), JobState::kCollecting);
  EXPECT_EQ(m.NextDeadline(t), t + kCollectS + 10) << "the records' wait is added";
  RankStack own(0, "x", "all_reduce (t.py:3)");
  own.fr = record(0, 6);
  m.OnStacks({own}, t + 1);
  for (int shim : {1, 2, 3}) {
    Msg st("stacks");
    st.Set("shim", shim).Set("node", shim).Set("host", "h" + std::to_string(shim));
    std::string list = "[]";
    if (shim < 3)
      list = "[{\"rank\":" + std::to_string(shim) + ",\"sig\":\"x\",\"fr\":" +
             FrSummaryJson(record(shim, shim == 2 ? 5 : 6)) + "}]";
    st.SetRaw("stacks", list);
    FromChild(&m, st, t + 1);
  }
  ASSERT_EQ(m.state(), JobState::kEnding) << JobStateName(m.state());
  ASSERT_EQ(m.roster()->retirements().size(), 1u);
  EXPECT_EQ(m.roster()->retirements()[0].node, 2);
  EXPECT_EQ(m.roster()->retirements()[0].reason,
            "its ranks failed first or hung the job in 1 attempts in a row (1 to 1; last: rank 2 "
            "never entered all_reduce #6 of group 0)");
  EndRound(&m, {1, 2, 3}, t + 2);
  if (m.state() == JobState::kBackingOff) m.OnTimer(m.NextDeadline(t + 2));
  ASSERT_EQ(ports.down.back().type(), "restart");
  EXPECT_EQ(ports.down.back().Str("nodes"), "0-1,3");
}

TEST(JobSpares, FailuresOnSeveralNodesAtOnceOrOfTheCommandRetireNothing) {
  FakePorts ports = Ports();
  JobMachine m(Config(0), &ports);
  m.Start(0);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const double t = attempt * 100;
    FromChild(&m, FailFrom(2, 1000 + t, attempt == 3 ? 127 : 7), t);
    if (attempt != 3) FromChild(&m, FailFrom(1, 1000 + t + 0.01), t);  // same window
    m.OnTimer(t + kFailWindowS);
    if (attempt == 3) break;
    EndRound(&m, {1, 2, 3}, t + 1);
  }
  EXPECT_TRUE(m.roster()->retirements().empty());
  EXPECT_EQ(m.state(), JobState::kStopped);  // 127 is never restarted
}

TEST(JobSpares, NoSpareLeftEndsTheJobWithTheRetiredNodes) {
  FakePorts ports = Ports();
  JobMachine m(Config(0), &ports);
  m.NoteHost(1, "h1");
  m.NoteHost(2, "h2");
  m.Start(0);
  m.OnShimLost(1, "the control plane lost rank 1's shim on h1 (closed)", false, 10);
  m.OnShimLost(2, "the control plane lost rank 2's shim on h2 (closed)", false, 10.01);
  EXPECT_EQ(m.state(), JobState::kStopped);
  EXPECT_EQ(ports.down.back().Int("code"), 125);
  auto last = LastOrder(&m);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->exit_code, 125);
  EXPECT_NE(last->message.find("no spare left"), std::string::npos) << last->message;
  EXPECT_NE(last->retired_json.find("\"node\":1"), std::string::npos) << last->retired_json;
  EXPECT_NE(last->retired_json.find("\"node\":2"), std::string::npos) << last->retired_json;
  EXPECT_NE(last->trailer.find("NODE_RANK 2, rank 2's shim on h2, retired in attempt 1"),
            std::string::npos)
      << last->trailer;
}

TEST(JobSpares, ALostShimTakesItsSubtreeWithIt) {
  FakePorts ports = Ports();
  ports.below[1] = {3};  // the spare hangs under shim 1
  JobMachine m(Config(0), &ports);
  m.Start(0);
  m.OnShimLost(1, "the control plane lost rank 1's shim (silent for 5.0 s)", true, 10);
  // Both are retired: NODE_RANK 1 has no spare left.
  EXPECT_EQ(m.state(), JobState::kStopped);
  EXPECT_EQ(m.roster()->retirements().size(), 2u);
}

TEST(JobSpares, ALostSpareIsOnlyNoted) {
  FakePorts ports = Ports();
  JobMachine m(Config(0), &ports);
  m.Start(0);
  m.OnShimLost(3, "the control plane lost rank 3's shim (closed)", false, 10);
  EXPECT_EQ(m.state(), JobState::kRunning);
  EXPECT_TRUE(ports.down.empty());
  EXPECT_TRUE(m.roster()->Spares().empty());
}

}  // namespace
}  // namespace aml
