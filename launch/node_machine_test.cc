#include "launch/node_machine.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "launch/node_machine_fakes.h"

namespace aml {
namespace {

using namespace node_test;  // NOLINT: the doubles of this suite

TEST(NodeMachine, AFailureEndsTheOthersWithGraceThenSigkill) {
  FakeProcs procs;
  NodeMachine m(Two(), &procs, nullptr);
  m.Start(0);
  EXPECT_EQ(m.state(), NodeState::kRunning);
  m.OnExit(1, Exited(7), 1);
  EXPECT_EQ(m.state(), NodeState::kTerminating);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 1);  // only the rank still running
  EXPECT_EQ(m.NextDeadline(1), 1 + 3);     // --grace
  EXPECT_TRUE(m.Step(2));
  EXPECT_TRUE(m.Step(4));
  EXPECT_EQ(m.state(), NodeState::kKilling);
  EXPECT_EQ(procs.SignalsOf(SIGKILL), 1);
  m.OnExit(0, SIGKILL, 4.1);
  EXPECT_FALSE(m.Step(4.1));  // drained at once, no job: done
  EXPECT_EQ(m.state(), NodeState::kDone);
  EXPECT_EQ(m.ExitCode(), 7);
  EXPECT_EQ(*m.first_failure(), 1u);
}

TEST(NodeMachine, RanksStillAliveFiveSecondsAfterSigkillAreGivenUp) {
  FakeProcs procs;
  NodeMachine m(Two(), &procs, nullptr);
  m.Start(0);
  m.OnExit(0, Exited(3), 1);
  m.Step(4);
  ASSERT_EQ(m.state(), NodeState::kKilling);
  EXPECT_EQ(m.NextDeadline(4), 4 + NodeMachine::kAfterKillS);
  EXPECT_FALSE(m.Step(4 + NodeMachine::kAfterKillS));
  EXPECT_EQ(m.state(), NodeState::kDone);
  EXPECT_EQ(m.ExitCode(), 3);
}

TEST(NodeMachine, WhatTheRanksLeftIsDrainedThenKilled) {
  FakeProcs procs;
  procs.stragglers = true;
  procs.output_open = true;
  NodeMachine m(Two(), &procs, nullptr);
  m.Start(0);
  m.OnExit(0, Exited(0), 1);
  m.OnExit(1, Exited(0), 1);
  EXPECT_TRUE(m.Step(1));
  EXPECT_EQ(m.state(), NodeState::kDraining);
  EXPECT_EQ(procs.straggler_signals, 1);
  EXPECT_EQ(m.NextDeadline(1), 1 + NodeMachine::kDrainS);
  EXPECT_FALSE(m.Step(1 + NodeMachine::kDrainS));
  EXPECT_EQ(procs.straggler_signals, 2);  // SIGKILL then
  EXPECT_EQ(procs.groups_killed, 1);
  EXPECT_EQ(m.ExitCode(), 0);
}

// In a teardown, what the ranks left gets a second past their --grace, so
// that the shim is gone within --grace + 1 s (aml-plane-sim's timing rule).
TEST(NodeMachine, InATeardownStragglersGetOneSecondPastTheGrace) {
  FakeProcs procs;
  procs.stragglers = true;
  NodeMachine m(NodeConfig{1, 2}, &procs, nullptr);
  m.Start(0);
  m.OnSignal(SIGTERM, 42, 10);
  m.Step(12);  // --grace 2: SIGKILL
  m.OnExit(0, SIGKILL, 12);
  m.Step(12);
  ASSERT_EQ(m.state(), NodeState::kDraining);
  EXPECT_EQ(m.NextDeadline(12), 13);  // not 12 + min(2, 2)
}

TEST(NodeMachine, ASecondSignalKillsAtOnceTheSameRequestTwiceDoesNot) {
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  m.OnSignal(SIGTERM, 42, 1);
  EXPECT_EQ(job.signalled, 1);
  EXPECT_EQ(m.state(), NodeState::kTerminating);
  m.OnSignal(SIGTERM, 42, 1.05);  // GNU timeout: the child, then its group
  EXPECT_FALSE(m.hurry());
  EXPECT_EQ(m.NextDeadline(1.05), 1 + 3);
  m.OnSignal(SIGINT, 0, 2);
  EXPECT_TRUE(m.hurry());
  EXPECT_EQ(m.NextDeadline(2), 2);
}

TEST(NodeMachine, AStopOrderEndsTheRanksAndGivesItsStatus) {
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  job.orders.push_back(StopOrder::Of(9, "aml-shim: stopped: rank 5 failed first\n", ""));
  m.TakeOrders(1);
  EXPECT_EQ(m.state(), NodeState::kTerminating);
  m.OnExit(0, SIGTERM, 1.1);
  m.OnExit(1, SIGTERM, 1.1);
  job.may_exit = false;
  EXPECT_TRUE(m.Step(1.2));
  EXPECT_EQ(m.state(), NodeState::kEnded);  // the job still owes: it relays
  EXPECT_EQ(job.done, 1);
  job.may_exit = true;
  EXPECT_FALSE(m.Step(1.3));
  EXPECT_EQ(m.ExitCode(), 9);
  EXPECT_EQ(job.failures, 0);  // the ranks it ended are not failures
}

TEST(NodeMachine, ARestartWaitsForTheGroupsThenStartsEveryRankAgain) {
  FakeProcs procs;
  FakeJob job;
  job.may_exit = false;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  m.OnExit(0, Exited(7), 1);
  EXPECT_EQ(job.failures, 1);
  m.OnExit(1, SIGTERM, 1.1);
  m.Step(1.2);
  ASSERT_EQ(m.state(), NodeState::kEnded);
  RestartOrder r;
  r.restart = 1;
  r.master_port = 4242;
  job.orders.push_back(r);
  procs.groups_empty = false;
  m.TakeOrders(1.3);
  EXPECT_TRUE(m.Step(1.3));
  EXPECT_EQ(m.state(), NodeState::kRestarting);
  EXPECT_EQ(procs.starts, 2);  // not yet
  procs.groups_empty = true;
  EXPECT_TRUE(m.Step(1.4));
  EXPECT_EQ(m.state(), NodeState::kRunning);
  EXPECT_EQ(procs.starts, 4);
  EXPECT_EQ(procs.restarts_begun, 1);
  EXPECT_EQ(m.restarts(), 1);
  EXPECT_FALSE(m.first_failure());  // a new attempt
}

TEST(NodeMachine, AnEndTakenWithTheRestartBeforeItEndsThatAttemptBeforeItStarts) {
  // A shim descheduled while the job restarted and failed again reads the
  // restart and the next halt at once: the restarted attempt starts no
  // rank, says it ended (and gives the records asked for: none), and the
  // one after starts (aml-plane-sim, busy shims: the node ran the new
  // attempt's ranks while the job waited 32 s for it to end them).
  FakeProcs procs;
  FakeJob job;
  job.may_exit = false;
  NodeConfig c = Two();
  c.records_on_failure = true;
  NodeMachine m(c, &procs, &job);
  m.Start(0);
  m.OnExit(0, Exited(7), 1);
  m.OnExit(1, SIGTERM, 1.1);
  m.Step(1.2);
  ASSERT_EQ(job.done, 1);
  RestartOrder r;
  r.restart = 1;
  job.orders.push_back(r);
  EndAttemptOrder halt;
  halt.records = true;
  job.orders.push_back(halt);
  m.TakeOrders(5);
  m.Step(5);
  EXPECT_EQ(m.NextDeadline(5), 5) << "it says so at once";
  m.Step(5);
  EXPECT_EQ(procs.starts, 2) << "the ended attempt started no rank";
  EXPECT_EQ(m.restarts(), 1);
  EXPECT_EQ(job.done, 2) << "it said that attempt's ranks ended";
  EXPECT_EQ(job.records, (std::vector<size_t>{1, 0}));
  r.restart = 2;
  job.orders.push_back(r);
  m.TakeOrders(6);
  m.Step(6);
  EXPECT_EQ(m.state(), NodeState::kRunning);
  EXPECT_EQ(procs.starts, 4);
  EXPECT_EQ(m.restarts(), 2);
}

// A rank failed, the other ended, and the job orders a restart while the
// ranks' process groups are not empty yet.
void RestartOrderedWhileGroupsLive(NodeMachine* m, FakeProcs* procs, FakeJob* job) {
  m->Start(0);
  m->OnExit(0, Exited(7), 1);
  m->OnExit(1, SIGTERM, 1);
  job->may_exit = false;
  m->Step(1);
  job->orders.push_back(RestartOrder{});
  procs->groups_empty = false;
  m->TakeOrders(2);
}

TEST(NodeMachine, GroupsThatNeverEmptyStopTheRestartWith125) {
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  RestartOrderedWhileGroupsLive(&m, &procs, &job);
  EXPECT_TRUE(m.Step(2));
  EXPECT_FALSE(m.Step(2 + NodeMachine::kAfterKillS));
  EXPECT_EQ(m.ExitCode(), 125);
}

TEST(NodeMachine, AStopDuringTheWaitForARestartStartsNoAttempt) {
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  RestartOrderedWhileGroupsLive(&m, &procs, &job);
  m.Step(2);
  ASSERT_EQ(m.state(), NodeState::kRestarting);
  m.OnSignal(SIGTERM, 42, 2.5);
  EXPECT_EQ(m.state(), NodeState::kEnded);
  procs.groups_empty = true;
  job.may_exit = true;
  EXPECT_FALSE(m.Step(3));
  EXPECT_EQ(procs.starts, 2);  // the first attempt's two, no more
}

// The launcher's signal read in the same round as a restart ordered just
// before it (the root had not heard of the signal yet): the shim is
// leaving, and starts no attempt.
TEST(NodeMachine, ARestartTakenAfterTheLaunchersSignalStartsNoAttempt) {
  FakeProcs procs;
  FakeJob job;
  job.may_exit = false;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  m.OnExit(0, Exited(7), 1);
  m.OnExit(1, SIGTERM, 1.1);
  m.Step(1.2);
  ASSERT_EQ(m.state(), NodeState::kEnded);
  m.OnSignal(SIGTERM, 42, 2);
  RestartOrder r;
  r.restart = 1;
  job.orders.push_back(r);
  m.TakeOrders(2);
  m.Step(2.1);
  job.may_exit = true;
  m.Step(3);
  EXPECT_EQ(procs.starts, 2) << "the first attempt's two, no more";
  EXPECT_EQ(procs.restarts_begun, 0);
}

// Stopped by its launcher between two attempts (no rank ran): the job was
// stopped, not done (aml-plane-sim: such a shim exited 0).
// Ranks that ignore the launcher's SIGTERM are SIGKILLed after --grace:
// the shim gives the status of the rank that ended first after the signal
// (137), not 143, as a plain process would.
TEST(NodeMachine, RanksThatIgnoreTheSignalGiveTheStatusOfTheirSigkill) {
  FakeProcs procs;
  NodeMachine m(Two(), &procs, nullptr);
  m.Start(0);
  m.OnSignal(SIGTERM, 42, 1);
  m.Step(1);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 2);
  m.Step(4);  // --grace 3: SIGKILL
  EXPECT_EQ(procs.SignalsOf(SIGKILL), 2);
  m.OnExit(1, SIGKILL, 4.01);
  m.OnExit(0, SIGKILL, 4.02);
  m.Step(4.02);
  EXPECT_EQ(m.ExitCode(), 128 + SIGKILL);
}

TEST(NodeMachine, ASignalWithNoRankRunningExits128PlusItsNumber) {
  FakeProcs procs;
  FakeJob job;
  NodeMachine m(Two(), &procs, &job);
  m.Start(0);
  job.orders.push_back(EndAttemptOrder{});
  m.TakeOrders(1);
  m.OnExit(0, SIGTERM, 1.1);
  m.OnExit(1, SIGTERM, 1.1);
  job.may_exit = false;
  m.Step(1.2);
  m.OnSignal(SIGTERM, 42, 2);
  EXPECT_EQ(m.ExitCode(), 143);
  // Ranks that all ended well before the signal: 0.
  FakeProcs p2;
  NodeMachine well(Two(), &p2, &job);
  well.Start(0);
  well.OnExit(0, Exited(0), 1);
  well.OnExit(1, Exited(0), 1);
  well.Step(1);
  well.OnSignal(SIGTERM, 42, 2);
  EXPECT_EQ(well.ExitCode(), 0);
}

}  // namespace
}  // namespace aml
