// The node machine with a hang's stacks, the flight records (a failure's,
// a look's) and a rank's start-up (node_machine.h).
#include "launch/node_machine.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "launch/node_machine_fakes.h"

namespace aml {
namespace {

using namespace node_test;  // NOLINT: the doubles of this suite

TEST(NodeMachine, StacksAreReadFromOutsideThenByTheDumpThenSent) {
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  OrderCollect(&m, &job, 1);
  EXPECT_EQ(m.state(), NodeState::kCollecting);
  EXPECT_EQ(m.stacks(), StackPhase::kProbing);
  EXPECT_EQ(m.NextDeadline(1), 10);  // the readers' deadline
  m.Step(10);
  EXPECT_EQ(m.stacks(), StackPhase::kAborting);
  EXPECT_EQ(procs.aborted.size(), 2u);
  m.OnExit(0, SIGABRT, 10.1);  // a dump, not a failure
  EXPECT_EQ(job.failures, 0);
  m.Step(10.1);
  EXPECT_EQ(job.stacks, 0);  // rank 1 may still dump
  m.Step(10 + NodeMachine::kCollectS);
  EXPECT_EQ(m.stacks(), StackPhase::kSent);
  EXPECT_EQ(job.stacks, 1);
}

TEST(NodeMachine, ASignalDuringTheRollCallWaitsForItsReadersThoughTheRanksEnded) {
  // The hang's readers run; the launcher's SIGTERM comes; the ranks end at
  // once (their handlers), while a reader is still to finish. The node
  // does not finish before its stacks are sent (the roll-call's, with its
  // 124), nor does it spin meanwhile.
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  OrderCollect(&m, &job, 1);
  ASSERT_EQ(m.stacks(), StackPhase::kProbing);
  m.OnSignal(SIGTERM, 1, 2);
  m.OnExit(0, Exited(143), 2.1);
  m.OnExit(1, Exited(143), 2.1);
  EXPECT_TRUE(m.Step(2.2));
  EXPECT_NE(m.state(), NodeState::kDone);
  EXPECT_EQ(job.stacks, 0);
  EXPECT_GT(m.NextDeadline(2.2), 2.2);  // the readers' deadline, or their end
  procs.probe_running = false;  // the reader ended
  EXPECT_FALSE(m.Step(2.5));
  EXPECT_EQ(m.stacks(), StackPhase::kSent);
  EXPECT_EQ(job.stacks, 1);
  EXPECT_EQ(m.state(), NodeState::kDone);
}

TEST(NodeMachine, AReaderLaterThanTheGraceIsNotWaitedForNorSpunOn) {
  // As above, but the reader is still at it when --grace (3 s) is over:
  // the node waits no more for it, and while the job keeps it (its shims
  // below), its next deadline is not "now" (the simulator's seed 822163
  // found the root spinning so).
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  OrderCollect(&m, &job, 1);
  m.OnSignal(SIGTERM, 1, 2);
  m.OnExit(0, Exited(143), 2.1);
  m.OnExit(1, Exited(143), 2.1);
  EXPECT_TRUE(m.Step(2.2));
  EXPECT_EQ(m.NextDeadline(2.2), 5);  // --grace's end, before the readers' 10
  job.may_exit = false;
  EXPECT_TRUE(m.Step(5));
  EXPECT_GT(m.NextDeadline(5), 5);
  job.may_exit = true;
  EXPECT_FALSE(m.Step(6));
  EXPECT_EQ(m.state(), NodeState::kDone);
}

TEST(NodeMachine, TheFlightRecordsComeFirstWhileEveryRankStandsWhereItHung) {
  FakeProcs procs;
  procs.dumps_until = 3;  // the records come at 3 (or --dump-timeout passes)
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  OrderCollect(&m, &job, 1);
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_EQ(m.stacks(), StackPhase::kDumping);
  EXPECT_EQ(m.NextDeadline(1), 3);
  m.Step(2);
  EXPECT_EQ(m.stacks(), StackPhase::kDumping);
  EXPECT_FALSE(procs.probe_running) << "no reader from outside before the records";
  EXPECT_TRUE(procs.aborted.empty());
  m.Step(3);
  EXPECT_EQ(m.stacks(), StackPhase::kProbing);
  EXPECT_TRUE(procs.probe_running);
}

TEST(NodeMachine, RanksThatAllEndedInTheHangsDumpsAreSettledAtOnce) {
  FakeProcs procs;
  procs.dumps_until = 9;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  OrderCollect(&m, &job, 1);
  m.OnExit(0, SIGKILL, 2);
  m.Step(2);
  EXPECT_EQ(procs.dumps_ended, 0) << "rank 1 still runs: it may yet answer";
  EXPECT_EQ(m.stacks(), StackPhase::kDumping);
  m.OnExit(1, SIGKILL, 3);
  m.Step(3);
  EXPECT_EQ(procs.dumps_ended, 1);
  EXPECT_NE(m.stacks(), StackPhase::kDumping) << "not waiting for --dump-timeout";
}

TEST(NodeMachine, ASilentNodeLooksAtItsRecordsAndCollectivesDoneAreActivity) {
  FakeProcs procs;
  FakeJob job;
  NodeConfig c = Two();
  c.look_every_s = 10;
  NodeMachine m(c, &procs, &job);
  m.Start(0);
  m.NoteOutput(5);  // the ranks wrote: the first look waits 10 s from then
  EXPECT_EQ(m.NextDeadline(6), 15);
  procs.answered = 2;
  procs.progress = 40;
  m.Step(15);  // the first look: its records came at once
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_FALSE(m.looking());
  EXPECT_EQ(job.outputs, 0) << "no earlier look to compare with";
  EXPECT_EQ(m.NextDeadline(15), 25);
  m.Step(25);  // nothing completed since
  EXPECT_EQ(job.outputs, 0);
  procs.progress = 41;
  m.Step(35);  // a collective completed: activity
  EXPECT_EQ(procs.dumps_started, 3);
  EXPECT_EQ(job.outputs, 1);
  // A look under way when the stacks are asked for gives way to them.
  procs.dumps_until = 100;
  m.Step(45);
  EXPECT_TRUE(m.looking());
  OrderCollect(&m, &job, 46);
  EXPECT_FALSE(m.looking());
  EXPECT_EQ(m.stacks(), StackPhase::kDumping);
  EXPECT_EQ(procs.dumps_started, 5);
}

TEST(NodeMachine, AStartingRanksCpuTimeIsActivityUntilItsGroupIsUpForABoundedTime) {
  // No rank has a process group yet (no pipe: no record answers): the CPU
  // time they spend since the last reading is activity, as output is; CPU
  // time that does not grow is not; nor any after 30 looks' time.
  FakeProcs procs;
  FakeJob job;
  NodeConfig c = Two();
  c.look_every_s = 5;  // --hang-timeout 15s
  NodeMachine m(c, &procs, &job);
  procs.starting = {{0, 0}, {1, 0}};  // just started
  m.Start(0);
  procs.starting = {{0, 1.6}, {1, 1.6}};  // importing torch, preparing data
  EXPECT_EQ(m.NextDeadline(0), 5);
  m.Step(5);
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_EQ(job.outputs, 1) << "a starting rank that spends CPU is not silent";
  EXPECT_EQ(m.last_output(), 5);
  procs.starting = {{0, 1.7}, {1, 1.7}};  // 4 % of a core: threads that wait
  m.Step(10);
  EXPECT_EQ(job.outputs, 1) << "CPU time that barely grew is no activity";
  procs.starting = {{0, 3.5}, {1, 3.5}};
  m.Step(15);
  EXPECT_EQ(job.outputs, 2);
  // Its group up (it answers its pipe; no rank starts any more): collectives
  // alone are activity again, and the CPU time is read no more.
  procs.starting.clear();
  procs.answered = 2;
  procs.progress = 10;
  m.Step(20);
  m.Step(25);
  EXPECT_EQ(job.outputs, 2);
  procs.starting = {{0, 100}};
  EXPECT_EQ(m.NextDeadline(25), 30) << "the next look's";
  m.Step(30);
  EXPECT_EQ(job.outputs, 2) << "a rank past its start never starts again";
  // A rank that never gets a group: its CPU counts for 150 s (30 looks).
  NodeMachine late(c, &procs, &job);
  procs.answered = 0;
  procs.starting = {{0, 0}};
  late.Start(0);
  procs.starting = {{0, 1}};
  for (double t = 5; t < 150; t += 5) late.Step(t);
  const int outputs = job.outputs;
  procs.starting = {{0, 500}};
  late.Step(150);
  late.Step(155);
  EXPECT_EQ(job.outputs, outputs) << "a start-up that busy is counted only for a bounded time";
}

TEST(NodeMachine, AStartingRanksCpuTimeIsReadWhileALooksDumpsComeLate) {
  // Beside CPU hogs a look's records may take seconds (an agent given no
  // core in time): the starting ranks' CPU time is still read every look's
  // time, so their busy start-up is not silent for --hang-timeout (before:
  // read only when a look's dumps were done; test_culprit.py in CI).
  FakeProcs procs;
  FakeJob job;
  NodeConfig c = Two();
  c.look_every_s = 3;  // --hang-timeout 9s
  NodeMachine m(c, &procs, &job);
  procs.starting = {{0, 0}, {1, 0}};
  m.Start(0);
  procs.dumps_until = 12;  // the first look's dumps: 9 s late
  procs.starting = {{0, 1}, {1, 1}};
  m.Step(3);
  EXPECT_TRUE(m.looking());
  EXPECT_EQ(job.outputs, 1);
  EXPECT_EQ(m.NextDeadline(3), 6) << "the next reading, not the dumps' end";
  procs.starting = {{0, 2}, {1, 2}};
  m.Step(6);
  EXPECT_EQ(job.outputs, 2);
  procs.starting = {{0, 3}, {1, 3}};
  m.Step(9);
  EXPECT_EQ(job.outputs, 3);
  EXPECT_EQ(m.last_output(), 9);
}

TEST(NodeMachine, ARankThatEntersACollectiveDoesNotHideTheOthersStartingCpuTime) {
  // Rank 0 enters its first all-reduce (out of the starting ranks, its 20 s
  // of CPU time with it) while rank 1 still prepares its data: rank 1's
  // growth is activity (before: the sum fell, and that reading found none).
  FakeProcs procs;
  FakeJob job;
  NodeConfig c = Two();
  c.look_every_s = 3;
  NodeMachine m(c, &procs, &job);
  procs.starting = {{0, 0}, {1, 0}};
  m.Start(0);
  procs.starting = {{0, 20}, {1, 20}};
  m.Step(3);
  EXPECT_EQ(job.outputs, 1);
  procs.starting = {{1, 21.5}};
  m.Step(6);
  EXPECT_EQ(job.outputs, 2);
}

TEST(NodeMachine, AStandbysImportsAreNotTheAttemptsActivity) {
  // A rank started from its standby has spent seconds importing before the
  // attempt: the reading at its start is the baseline, so only what it
  // spends after is activity.
  FakeProcs procs;
  FakeJob job;
  NodeConfig c = Two();
  c.look_every_s = 3;
  NodeMachine m(c, &procs, &job);
  procs.starting = {{0, 6}, {1, 6}};  // torch imported in the standby
  m.Start(0);
  procs.starting = {{0, 6.05}, {1, 6.05}};  // waiting in its rendezvous
  m.Step(3);
  EXPECT_EQ(job.outputs, 0);
}

NodeConfig Recording() {
  NodeConfig c{3, 3};
  c.records_on_failure = true;
  return c;
}

LinkOrder PaceOrder(int64_t look) {
  PaceLookOrder o;
  o.look = look;
  return o;
}

TEST(NodeMachine, AStragglerLookReadsTheRecordsWhateverTheOutputAndAnswers) {
  FakeProcs procs;
  procs.dumps_until = 10.5;
  procs.times = {RankTimes{0, {{"0", {{3, 1000}}}}}, RankTimes{1, {{"0", {{3, 2000}}}}}};
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  m.NoteOutput(9.9);  // the ranks write: a straggler look does not wait for silence
  job.orders.push_back(PaceOrder(4));
  m.TakeOrders(10);
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_TRUE(job.paces.empty());
  EXPECT_EQ(m.NextDeadline(10), 10.5);
  m.Step(10.5);
  ASSERT_EQ(job.paces.size(), 1u);
  EXPECT_EQ(job.paces[0], std::make_pair(int64_t{4}, size_t{2}));
  EXPECT_EQ(m.pace_looks(), 1);
  EXPECT_EQ(m.state(), NodeState::kRunning);
}

TEST(NodeMachine, AStragglerLookNoRankCanServeIsAnsweredAtOnceWithNothing) {
  FakeProcs procs;
  procs.dumps_until = 100;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  job.orders.push_back(PaceOrder(1));
  m.TakeOrders(1);
  // A rank fails while the look waits: the look is overtaken.
  m.OnExit(0, Exited(7), 2);
  m.Step(2);
  ASSERT_EQ(job.paces.size(), 1u);
  EXPECT_EQ(job.paces[0], std::make_pair(int64_t{1}, size_t{0}));
  // Another while the ranks end: answered at once.
  job.orders.push_back(PaceOrder(2));
  m.TakeOrders(3);
  ASSERT_EQ(job.paces.size(), 2u);
  EXPECT_EQ(job.paces[1], std::make_pair(int64_t{2}, size_t{0}));
  EXPECT_EQ(m.pace_looks(), 0);
}

TEST(NodeMachine, AFailureTakesTheOthersRecordsBeforeItEndsThem) {
  FakeProcs procs;
  procs.dumps_until = 4;  // the records come at 4
  FakeJob job;
  NodeMachine m(Recording(), &procs, &job);
  m.Start(0);
  m.OnExit(2, Exited(7), 1);
  EXPECT_EQ(job.failures, 1);
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 0) << "no rank is ended before its record is taken";
  EXPECT_EQ(m.state(), NodeState::kTerminating);
  EXPECT_EQ(m.NextDeadline(1), 4);
  EXPECT_TRUE(m.Step(3));
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 0);
  EXPECT_TRUE(m.Step(4));
  ASSERT_EQ(job.records.size(), 1u);
  EXPECT_EQ(procs.records_taken, 1);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 2);  // the two still running
  EXPECT_EQ(m.NextDeadline(4), 4 + 3);     // then --grace
  EXPECT_TRUE(m.Step(7));
  EXPECT_EQ(procs.SignalsOf(SIGKILL), 2);
}

// The other ranks ended while their records were awaited (SIGKILLed by
// something else, a crash in the dump): none can write again, so what is
// still awaited is settled with what came (FlightHarvest::Settle), rather
// than waited for, then said to be "no record".
TEST(NodeMachine, RanksThatAllEndedWhileTheirRecordsWereAwaitedAreSettledAtOnce) {
  FakeProcs procs;
  procs.dumps_until = 9;
  FakeJob job;
  NodeMachine m(Recording(), &procs, &job);
  m.Start(0);
  m.OnExit(2, Exited(7), 1);
  ASSERT_EQ(procs.dumps_started, 1);
  m.OnExit(0, SIGKILL, 2);
  EXPECT_TRUE(m.Step(2));
  EXPECT_EQ(procs.dumps_ended, 0) << "rank 1 still runs: it may yet answer";
  EXPECT_TRUE(job.records.empty());
  m.OnExit(1, SIGKILL, 3);
  m.Step(3);
  EXPECT_EQ(procs.dumps_ended, 1);
  EXPECT_EQ(job.records.size(), 1u);
}

TEST(NodeMachine, AHaltWithRecordsTakesThemOnceAPlainEndDoesNot) {
  FakeProcs procs;
  procs.dumps_until = 5;
  FakeJob job;
  NodeMachine m(Recording(), &procs, &job);
  m.Start(0);
  EndAttemptOrder halt;
  halt.records = true;
  job.orders.push_back(halt);
  job.orders.push_back(halt);  // (twice: taken once)
  m.TakeOrders(1);
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 0);
  // The verdict's stop cuts the wait short: what came is sent, the ranks end.
  job.orders.push_back(StopOrder::Of(7, "", ""));
  m.TakeOrders(2);
  EXPECT_EQ(job.records.size(), 1u);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 3);
  // A node whose ranks had all ended sends none, at once: rank 0 waits for no one.
  FakeProcs idle;
  FakeJob job2;
  NodeMachine n(Recording(), &idle, &job2);
  n.Start(0);
  for (size_t i = 0; i < 3; ++i) n.OnExit(i, Exited(0), 0.5);
  job2.orders.push_back(halt);
  n.TakeOrders(1);
  EXPECT_EQ(idle.dumps_started, 0);
  ASSERT_EQ(job2.records.size(), 1u);
  EXPECT_EQ(job2.records[0], 0u);
  // Without the recorder: ended at once, nothing asked.
  FakeProcs plain;
  FakeJob job3;
  NodeMachine o(NodeConfig{3, 3}, &plain, &job3);
  o.Start(0);
  job3.orders.push_back(halt);
  o.TakeOrders(1);
  EXPECT_EQ(plain.dumps_started, 0);
  EXPECT_EQ(plain.SignalsOf(SIGTERM), 3);
  EXPECT_TRUE(job3.records.empty());
}

TEST(NodeMachine, TheLaunchersSignalDuringTheRecordsEndsTheWaitWithItsGrace) {
  FakeProcs procs;
  procs.dumps_until = 50;
  FakeJob job;
  NodeMachine m(Recording(), &procs, &job);
  m.Start(0);
  m.OnExit(0, Exited(1), 1);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 0);
  m.OnSignal(SIGTERM, 1, 2);
  EXPECT_EQ(job.records.size(), 1u);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 2);  // forwarded once, not twice
  EXPECT_EQ(m.NextDeadline(2), 2 + 3);
}

TEST(NodeMachine, ARankThatCannotStartEndsTheOthersAtOnce) {
  FakeProcs procs;
  procs.fail_start_at = 1;
  NodeMachine m(Two(), &procs, nullptr);
  m.Start(0);
  EXPECT_EQ(m.state(), NodeState::kTerminating);
  EXPECT_EQ(m.NextDeadline(0), 0);  // no grace
  m.Step(0);
  EXPECT_EQ(m.state(), NodeState::kKilling);
  m.OnExit(0, SIGKILL, 0.1);
  EXPECT_FALSE(m.Step(0.1));
  EXPECT_EQ(m.ExitCode(), 127);
}

}  // namespace
}  // namespace aml
