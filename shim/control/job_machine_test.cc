#include "shim/control/job_machine.h"

#include <gtest/gtest.h>

#include "shim/control/fake_job_ports.h"

namespace aml {
namespace {

JobConfig Config(int rank, int size, int max_restarts = 0) {
  return TestConfig(rank, size, max_restarts);
}

LocalFailure Failure(int rank, double wall) {
  LocalFailure f;
  f.rank = rank;
  f.exit_code = 7;
  f.status = "exited with status 7";
  f.wall_time = wall;
  f.summary = "summary of rank " + std::to_string(rank) + "\n";
  return f;
}


Msg FailFrom(int rank, double wall) {
  Msg m("fail");
  m.SetNumber("time", wall).Set("rank", rank).Set("node", rank).Set("code", 9);
  m.Set("host", "h" + std::to_string(rank)).Set("status", "exited with status 9");
  m.Set("summary", "remote summary\n").Set("json", "{}");
  return m;
}

TEST(JobMachine, RankZeroTakesTheEarliestFailureOfItsWindow) {
  FakePorts ports;
  JobMachine m(Config(0, 3), &ports);
  m.Start(10);
  m.OnChildFailed(Failure(0, 500.2), 10);
  EXPECT_EQ(m.state(), JobState::kDeciding);
  FromChild(&m, FailFrom(2, 500.1), 10.05);
  EXPECT_EQ(m.NextDeadline(10.05), 10 + kFailWindowS);
  m.OnTimer(10 + kFailWindowS);
  EXPECT_EQ(m.state(), JobState::kStopped);
  // The ranks were halted as the first failure came; the stop names the
  // earliest of the window.
  ASSERT_EQ(ports.down.size(), 2u);
  EXPECT_EQ(ports.down[0].type(), "halt");
  EXPECT_EQ(ports.down[1].type(), "stop");
  EXPECT_EQ(ports.down[1].Int("rank"), 2);
  auto o = m.TakeOrder();
  ASSERT_TRUE(o);
  EXPECT_TRUE(std::holds_alternative<EndAttemptOrder>(*o));
  o = m.TakeOrder();
  ASSERT_TRUE(o && std::holds_alternative<StopOrder>(*o));
  EXPECT_EQ(std::get<StopOrder>(*o).exit_code, 9);
  EXPECT_EQ(std::get<StopOrder>(*o).message, "remote summary\n");
}

TEST(JobMachine, AFailureOfAnAttemptThatIsOverIsNotThisAttemptsAndTheSameOneIsCountedOnce) {
  // A shim that moved below the heir after a cut says its words again
  // (its link may have lost them): one of an attempt that is over must not
  // end the attempt under way, and the same failure twice is one.
  FakePorts ports;
  JobMachine m(Config(0, 3), &ports);
  m.Start(10);
  FromChild(&m, FailFrom(2, 500.1).Set("a", 3), 10.05);
  EXPECT_EQ(m.state(), JobState::kRunning) << "attempt 4's failure, in attempt 1";
  EXPECT_TRUE(ports.down.empty());
  FromChild(&m, FailFrom(2, 500.1).Set("a", 0), 10.1);
  EXPECT_EQ(m.state(), JobState::kDeciding);
  FromChild(&m, FailFrom(2, 500.1).Set("a", 0), 10.2);  // said again
  m.OnTimer(10.1 + kFailWindowS);
  ASSERT_FALSE(ports.down.empty());
  EXPECT_EQ(ports.down.back().type(), "stop");
  EXPECT_EQ(ports.down.back().Str("what").find("2 ranks"), std::string::npos)
      << ports.down.back().Encode();
}

TEST(JobMachine, AMemberThatFailedWaitsForTheVerdictThenObeysIt) {
  FakePorts ports;
  JobMachine m(Config(3, 4), &ports);
  m.Start(0);
  m.OnChildFailed(Failure(3, 100), 1);
  EXPECT_EQ(m.state(), JobState::kFailed);
  ASSERT_EQ(ports.up.size(), 1u);
  EXPECT_EQ(ports.up[0].type(), "fail");
  m.OnChildrenDone({7, 0}, 1.5);
  EXPECT_FALSE(m.MayExit(2));  // the verdict's line is worth a moment
  Msg stop("stop");
  stop.Set("kind", std::string("fail")).Set("code", 7).Set("rank", 3).Set("by", "h0");
  FromParent(&m, stop, 1.6);
  EXPECT_EQ(m.state(), JobState::kStopped);
  auto o = Next<StopOrder>(&m);
  ASSERT_TRUE(o);
  EXPECT_NE(o->message.find("the job's first failure"), std::string::npos) << o->message;
  EXPECT_TRUE(m.MayExit(1.7));
}

// A flight record in which the rank entered all_reduce #seq and never
// completed it.
std::optional<FrSummary> WaitingIn(int rank, int64_t seq) {
  FrSummary s;
  s.rank = rank;
  FrGroup g;
  g.pg = "0";
  g.desc = "default_pg";
  g.enqueued = seq;
  g.completed = seq - 1;
  g.last.seq = seq;
  g.last.op = "all_reduce";
  g.last.sizes = "[[4]]";
  g.last.dtype = "Float";
  s.groups.push_back(g);
  return s;
}

Msg RecordsFrom(int shim, const std::string& ranks) {
  Msg m("records");
  m.Set("shim", shim).Set("node", shim).Set("host", "h" + std::to_string(shim));
  m.SetRaw("ranks", ranks);
  return m;
}

JobConfig Recording(int rank, int size) {
  JobConfig c = Config(rank, size);
  c.flight_recorder = true;
  c.dump_timeout_s = 10;
  return c;
}

TEST(JobMachine, AFailuresVerdictWaitsForEveryShimsRecordsAndSaysWhereTheOthersWaited) {
  FakePorts ports;
  JobMachine m(Recording(0, 3), &ports);
  m.Start(10);
  FromChild(&m, FailFrom(2, 500.1), 10);
  ASSERT_EQ(ports.down.size(), 1u);
  EXPECT_EQ(ports.down[0].type(), "halt");
  EXPECT_EQ(ports.down[0].Int("records"), 1) << "the halt asks for the records";
  auto halt = Next<EndAttemptOrder>(&m);
  ASSERT_TRUE(halt);
  EXPECT_TRUE(halt->records);
  EXPECT_EQ(m.NextDeadline(10), 10 + kFailWindowS + 10 + kRecordsSlackS);
  m.OnRecords({{0, WaitingIn(0, 6), ""}}, 10.5);
  Msg one("r");
  one.Set("rank", 1).SetRaw("fr", FrSummaryJson(*WaitingIn(1, 6)));
  FromChild(&m, RecordsFrom(1, "[" + one.Encode() + "]"), 10.6);
  EXPECT_EQ(m.state(), JobState::kDeciding);
  FromChild(&m, RecordsFrom(2, "[{\"rank\":2,\"frwhy\":\"it had ended\"}]"), 10.7);
  // Every shim's records are in: the verdict is due (its window was over).
  EXPECT_EQ(m.NextDeadline(10.7), 10.7);
  m.OnTimer(10.7);
  EXPECT_EQ(m.state(), JobState::kStopped);
  auto o = Next<StopOrder>(&m);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->exit_code, 9);
  EXPECT_EQ(o->waited_line,
            "aml-shim: rank 2 failed (exited with status 9) while ranks 0-1 waited in all_reduce "
            "#6 [[4]] Float of group 0 (default_pg)\n");
  EXPECT_NE(o->waited_json.find("\"ranks\":\"0-1\""), std::string::npos) << o->waited_json;
}

TEST(JobMachine, ALossWhileTheRecordsAreAwaitedComesAfterTheFailure) {
  // Shim 1 never sends its records (frozen): found lost, it does not
  // turn the failure that came first into a loss (aml-plane-sim, seed
  // 643845996); a failing node waits for the verdict past that wait.
  FakePorts ports;
  JobMachine m(Recording(0, 3), &ports);
  m.Start(10);
  FromChild(&m, FailFrom(2, 500.1), 10);
  m.OnRecords({{0, WaitingIn(0, 6), ""}}, 10.5);
  m.OnShimLost(1, "the control plane lost rank 1's shim on h1 (silent for 5.0 s)", true, 15);
  EXPECT_EQ(m.state(), JobState::kStopped);
  EXPECT_EQ(ports.down.back().type(), "stop");
  EXPECT_EQ(ports.down.back().Str("kind"), "fail");
  EXPECT_EQ(ports.down.back().Int("code"), 9);
  FakePorts member_ports;
  JobMachine member(Recording(3, 4), &member_ports);
  member.Start(0);
  member.OnChildFailed(Failure(3, 100), 1);
  member.OnChildrenDone({7, 0}, 1.5);
  EXPECT_FALSE(member.MayExit(1 + kVerdictWaitS + 1));
  EXPECT_TRUE(member.MayExit(1 + kVerdictWaitS + 10 + kRecordsSlackS));
}

// The spin of issue 30, item 2: a SIGTERM in every phase of a restart ends
// the shim once its bye is sent, and no attempt starts after it.
TEST(JobMachine, ASignalEndsEveryPhaseOfARestart) {
  for (int phase = 0; phase < 3; ++phase) {
    FakePorts ports;
    JobMachine m(Config(0, 2, 5), &ports);
    m.Start(0);
    m.OnChildFailed(Failure(0, 1), 1);
    m.OnTimer(1 + kFailWindowS);
    ASSERT_EQ(m.state(), JobState::kEnding);
    if (phase >= 1) {
      m.OnChildrenDone({7, 0}, 1.2);
      Msg ended("ended");
      ended.Set("shim", 1).SetNumber("out", 0);
      FromChild(&m, ended, 1.3);
      EXPECT_EQ(m.state(), JobState::kRunning);
    }
    if (phase == 2) {
      // A second short attempt, failing differently, backs off before the next.
      LocalFailure f = Failure(0, 3);
      f.exit_code = 8;
      m.OnChildFailed(f, 3);
      m.OnTimer(3 + kFailWindowS);
      m.OnChildrenDone({7, 0}, 3.2);
      Msg ended("ended");
      ended.Set("shim", 1).SetNumber("out", 0);
      FromChild(&m, ended, 3.3);
      ASSERT_EQ(m.state(), JobState::kBackingOff);
    }
    while (m.TakeOrder()) {
    }
    ports.flushed = false;
    m.OnShimSignalled(15, "", 4);
    EXPECT_EQ(m.state(), JobState::kSignalled);
    EXPECT_EQ(ports.down.back().type(), "bye");
    EXPECT_FALSE(m.MayExit(4.5));
    EXPECT_TRUE(m.MayExit(4 + kFlushS));
    m.OnTimer(100);
    EXPECT_FALSE(m.TakeOrder()) << "phase " << phase;
  }
}

// --warm-restart: a member says how its ranks of a restart started, with
// the attempt's number; rank 0 sums every shim's into the attempt's record
// (failure.json's "attempts"), a word of an attempt that is over aside.
TEST(JobMachine, RankZeroSumsHowEveryShimsRanksOfARestartStarted) {
  {
    FakePorts ports;
    JobMachine m(Config(1, 2, 5), &ports);
    m.Start(0);
    Msg restart("restart");
    restart.Set("n", 1).Set("port", 29501).Set("line", "restart 1 of 5\n");
    FromParent(&m, restart, 1);
    ports.up.clear();
    m.OnWarmStarts(2, 1, 1.5);
    ASSERT_EQ(ports.up.size(), 1u);
    EXPECT_EQ(ports.up[0].type(), "warm");
    EXPECT_EQ(ports.up[0].Int("shim"), 1);
    EXPECT_EQ(ports.up[0].Int("w"), 2);
    EXPECT_EQ(ports.up[0].Int("c"), 1);
    EXPECT_EQ(ports.up[0].Int("a"), 1);
  }
  FakePorts ports;
  JobMachine m(Config(0, 2, 1), &ports);
  m.Start(0);
  m.OnChildFailed(Failure(0, 1), 1);
  m.OnTimer(1 + kFailWindowS);
  m.OnChildrenDone({7, 0}, 1.2);
  Msg ended("ended");
  ended.Set("shim", 1).SetNumber("out", 0);
  FromChild(&m, ended, 1.3);
  ASSERT_EQ(m.restarts(), 1);
  while (m.TakeOrder()) {
  }
  Msg stale("warm");
  stale.Set("shim", 1).Set("w", 9).Set("c", 0).Set("a", 0);
  FromChild(&m, stale, 1.4);  // the first attempt's: not this one's
  m.OnWarmStarts(1, 1, 1.5);
  Msg warm("warm");
  warm.Set("shim", 1).Set("w", 2).Set("c", 0).Set("a", 1);
  FromChild(&m, warm, 1.6);
  m.OnChildFailed(Failure(0, 3), 3);  // the last attempt the budget allows
  m.OnTimer(3 + kFailWindowS);
  std::optional<StopOrder> o;
  while (std::optional<LinkOrder> next = m.TakeOrder())
    if (auto* s = std::get_if<StopOrder>(&*next)) o = *s;
  ASSERT_TRUE(o);
  EXPECT_NE(o->attempts_json.find("\"warm_restart\":{\"shims\":2,\"warm\":3,\"cold\":1}"),
            std::string::npos)
      << o->attempts_json;
}

TEST(JobMachine, RankZeroJudgesTheJobHungAndCollectsEveryShimsStacks) {
  FakePorts ports;
  JobConfig c = Config(0, 2);
  c.hang_timeout_s = 10;
  JobMachine m(c, &ports);
  m.Start(0);
  EXPECT_EQ(m.NextDeadline(0), 11);  // the timeout and a beat per level
  m.OnTimer(11);
  EXPECT_EQ(m.state(), JobState::kCollecting);
  EXPECT_EQ(ports.down.back().type(), "collect");
  EXPECT_TRUE(std::holds_alternative<CollectStacksOrder>(*m.TakeOrder()));
  m.OnStacks({{0, "Thread 1\n  File \"t.py\", line 3", "t.py:3"}}, 12);
  Msg stacks("stacks");
  stacks.Set("shim", 1).Set("node", 1).Set("host", "h1").SetRaw("stacks", "[]");
  FromChild(&m, stacks, 12.5);
  EXPECT_EQ(m.state(), JobState::kStopped);
  auto o = Next<StopOrder>(&m);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->exit_code, 124);
}

TEST(JobMachine, ARollCallUnderWayWhenTheSignalComesIsStillPrinted) {
  FakePorts ports;
  JobConfig c = Config(0, 1);
  c.hang_timeout_s = 2;
  JobMachine m(c, &ports);
  m.Start(0);
  m.OnTimer(3);
  ASSERT_EQ(m.state(), JobState::kCollecting);
  while (m.TakeOrder()) {
  }
  m.OnShimSignalled(15, "", 4);
  m.OnStacks({{0, "#0 after_the_term_handler", "after_the_term_handler"}}, 5);
  auto o = Next<StopOrder>(&m);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->exit_code, 124);
  EXPECT_NE(o->message.find("after_the_term_handler"), std::string::npos) << o->message;
  EXPECT_TRUE(m.MayExit(5));
}

TEST(JobMachine, EveryStateThatWaitsHasADeadline) {
  // Rank 0 collecting with a shim that never answers: the roll-call goes
  // out without it after kCollectS.
  FakePorts ports;
  JobConfig c = Config(0, 3);
  c.hang_timeout_s = 10;
  JobMachine m(c, &ports);
  m.Start(0);
  m.OnTimer(11);
  ASSERT_EQ(m.state(), JobState::kCollecting);
  EXPECT_EQ(m.NextDeadline(11), 11 + kCollectS);
  m.OnTimer(11 + kCollectS);
  EXPECT_EQ(m.state(), JobState::kStopped);
  // A member collecting whose rank 0 says nothing more stops itself.
  FakePorts p2;
  JobMachine member(Config(2, 3), &p2);
  member.Start(0);
  Msg collect("collect");
  FromParent(&member, collect, 5);
  EXPECT_EQ(member.NextDeadline(5), 5 + kStopWaitS);
  member.OnTimer(5 + kStopWaitS);
  EXPECT_EQ(member.state(), JobState::kStopped);
  // Rank 0 ending a round that a shim never finishes: the job ends as lost.
  FakePorts p3;
  JobMachine r(Config(0, 2, 3), &p3);
  r.Start(0);
  r.OnChildFailed(Failure(0, 1), 1);
  r.OnTimer(1 + kFailWindowS);
  ASSERT_EQ(r.state(), JobState::kEnding);
  const double until = 1 + kFailWindowS + 2 + kEndingS;
  EXPECT_EQ(r.NextDeadline(7), until);  // (a wake-up at 6 lets MayExit look again)
  r.OnTimer(until);
  EXPECT_EQ(r.state(), JobState::kStopped);
  EXPECT_EQ(p3.down.back().Str("kind"), "lost");
}

TEST(JobMachine, AShimWhosePartEndedWellSaysDoneOnceItsChildrenDid) {
  FakePorts ports;
  ports.children_done = false;
  JobMachine m(Config(1, 3), &ports);
  m.Start(0);
  m.OnChildrenDone({0, 0}, 1);
  EXPECT_TRUE(ports.up.empty());
  ports.children_done = true;
  Msg done("done");
  done.Set("n", 1);
  FromChild(&m, done, 2);
  EXPECT_EQ(m.state(), JobState::kDone);
  ASSERT_EQ(ports.up.size(), 1u);
  EXPECT_EQ(ports.up[0].Int("n"), 2);
  EXPECT_FALSE(m.MayExit(2.5));
  ports.parent_closed = true;
  EXPECT_TRUE(m.MayExit(2.5));
}

TEST(JobMachine, CutOffFromRankZeroANodeEndsItsPartAndTellsThoseBelow) {
  FakePorts ports;
  ports.linked = true;
  JobMachine m(Config(1, 3), &ports);
  m.Start(0);
  m.OnParentLost("aml-shim: lost the control plane\n", 8);
  EXPECT_EQ(m.state(), JobState::kStopped);
  EXPECT_EQ(ports.down.back().Str("kind"), "lost");
  EXPECT_TRUE(m.PrintsOwnFailure());
  auto stop = Next<StopOrder>(&m);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->exit_code, 125);
  // Those below end first, for --grace at most.
  EXPECT_FALSE(m.MayExit(9));
  EXPECT_TRUE(m.MayExit(8 + 2 + kFlushS));
}

}  // namespace
}  // namespace aml
