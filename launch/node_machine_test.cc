#include "launch/node_machine.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace aml {
namespace {

int Exited(int code) { return code << 8; }

// A process table that records what the machine asks of it.
struct FakeProcs : NodeProcs {
  std::vector<std::pair<size_t, int>> signals;  // (rank, signal)
  std::vector<size_t> aborted;
  int starts = 0, fail_start_at = -1;
  bool stragglers = false, output_open = false, groups_empty = true, probe_running = false;
  int straggler_signals = 0, groups_killed = 0, restarts_begun = 0;

  bool Start(size_t child, const LinkOrder*, int* code) override {
    if (starts++ == fail_start_at) {
      *code = 127;
      return false;
    }
    (void)child;
    return true;
  }
  void Signal(size_t child, int sig) override { signals.emplace_back(child, sig); }
  void Abort(size_t child) override { aborted.push_back(child); }
  bool SignalStragglers(int sig) override {
    (void)sig;
    ++straggler_signals;
    return stragglers;
  }
  bool StragglersLeft() override { return stragglers; }
  bool OutputOpen() const override { return output_open; }
  bool GroupsEmpty() override { return groups_empty; }
  void KillGroups() override { ++groups_killed; }
  // The flight records: none by default (done at once), else until `dumps_until`.
  int dumps_started = 0;
  double dumps_until = -1;
  bool probed_while_dumping = false;
  int64_t progress = 0;
  int answered = 0;
  double starting_cpu = -1;
  double StartingCpuS() const override { return starting_cpu; }
  void StartDumps(double, DumpAsk ask) override {
    ++dumps_started;
    asks.push_back(ask);
  }
  std::vector<DumpAsk> asks;
  int64_t DumpsProgress(int* a) const override {
    *a = answered;
    return progress;
  }
  bool DumpsDone(double now) override { return now >= dumps_until; }
  double DumpsNext(double now) const override { return std::max(now, dumps_until); }
  std::vector<RankTimes> times;
  std::vector<RankTimes> DumpsTimes() const override { return times; }
  void StartProbe() override {
    probe_running = true;
    probed_while_dumping = probed_while_dumping || dumps_until > 0;
  }
  bool ProbeRunning() const override { return probe_running; }
  bool ProbeDone(double now) override { return !probe_running || now >= 10; }
  double ProbeDeadline() const override { return 10; }
  void FinishProbe() override { probe_running = false; }
  LocalFailure Failure(size_t child) override {
    LocalFailure f;
    f.rank = static_cast<int>(child);
    f.exit_code = 7;
    return f;
  }
  std::vector<RankStack> Stacks() override { return {{0, "stack", "sig"}}; }
  std::vector<RankRecord> Records() override {
    ++records_taken;
    return {{0, std::nullopt, "no pipe"}};
  }
  int records_taken = 0;
  double FirstOutputWall() const override { return 0; }
  void TermSent(bool) override {}
  void BeginRestart(const LinkOrder&, bool) override { ++restarts_begun; }
  int SignalsOf(int sig) const {
    int n = 0;
    for (const auto& [c, s] : signals) n += s == sig;
    return n;
  }
};

// The job's side: orders to hand out, what it was told.
struct FakeJob : JobChannel {
  std::vector<LinkOrder> orders;
  int failures = 0, stacks = 0, done = 0, signalled = 0, outputs = 0;
  bool may_exit = true;
  void OnOutput(double) override { ++outputs; }
  void OnChildFailed(const LocalFailure&) override { ++failures; }
  void OnStacks(const std::vector<RankStack>&) override { ++stacks; }
  void OnRecords(const std::vector<RankRecord>& r) override { records.push_back(r.size()); }
  std::vector<size_t> records;
  // Each look answered: its number and how many ranks' times.
  std::vector<std::pair<int64_t, size_t>> paces;
  void OnPace(int64_t look, const std::vector<RankTimes>& t) override {
    paces.emplace_back(look, t.size());
  }
  void OnChildrenDone(const NodeOutcome&) override { ++done; }
  void OnShimSignalled(int, const std::string&) override { ++signalled; }
  bool MayExit() const override { return may_exit; }
  bool PrintsOwnFailure() const override { return true; }
  bool WritesJobRecord() const override { return true; }
  std::optional<LinkOrder> TakeOrder() override {
    if (orders.empty()) return std::nullopt;
    LinkOrder o = orders.front();
    orders.erase(orders.begin());
    return o;
  }
};

NodeConfig Two() { return NodeConfig{2, 3}; }

// The hang's verdict reaches the node at `now`: collect the stacks.
void OrderCollect(NodeMachine* m, FakeJob* job, double now) {
  job->orders.push_back(LinkOrder::Of(LinkOrder::Kind::kCollectStacks));
  m->TakeOrders(now);
}

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
  job.orders.push_back(LinkOrder::Stop(9, "aml-shim: stopped: rank 5 failed first\n", ""));
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
  LinkOrder r = LinkOrder::Of(LinkOrder::Kind::kRestart);
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
  LinkOrder r = LinkOrder::Of(LinkOrder::Kind::kRestart);
  r.restart = 1;
  job.orders.push_back(r);
  LinkOrder halt = LinkOrder::Of(LinkOrder::Kind::kEndAttempt);
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
  job->orders.push_back(LinkOrder::Of(LinkOrder::Kind::kRestart));
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
  job.orders.push_back(LinkOrder::Of(LinkOrder::Kind::kEndAttempt));
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
  // time they spend since the last look is activity, as output is; CPU
  // time that does not grow is not; nor any after 30 looks' time.
  FakeProcs procs;
  FakeJob job;
  NodeConfig c = Two();
  c.look_every_s = 5;  // --hang-timeout 15s
  NodeMachine m(c, &procs, &job);
  m.Start(0);
  procs.starting_cpu = 3.2;  // importing torch, preparing data
  m.Step(5);
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_EQ(job.outputs, 1) << "a starting rank that spends CPU is not silent";
  EXPECT_EQ(m.last_output(), 5);
  procs.starting_cpu = 3.4;  // 4 % of a core: threads that wait
  m.Step(10);  // the look is 5 s after the activity
  EXPECT_EQ(job.outputs, 1) << "CPU time that barely grew is no activity";
  procs.starting_cpu = 7;
  m.Step(15);
  EXPECT_EQ(job.outputs, 2);
  // Its group up (it answers its pipe; no rank starts any more): collectives
  // alone are activity again.
  procs.starting_cpu = -1;
  procs.answered = 2;
  procs.progress = 10;
  m.Step(20);
  m.Step(25);
  EXPECT_EQ(job.outputs, 2);
  // A rank that never gets a group: its CPU counts for 150 s (30 looks).
  NodeMachine late(c, &procs, &job);
  late.Start(0);
  procs.answered = 0;
  procs.starting_cpu = 1;
  for (double t = 5; t < 150; t += 5) late.Step(t);
  const int outputs = job.outputs;
  procs.starting_cpu = 500;
  late.Step(150);
  late.Step(155);
  EXPECT_EQ(job.outputs, outputs) << "a start-up that busy is counted only for a bounded time";
}

NodeConfig Recording() {
  NodeConfig c{3, 3};
  c.records_on_failure = true;
  return c;
}

LinkOrder PaceOrder(int64_t look) {
  LinkOrder o = LinkOrder::Of(LinkOrder::Kind::kPaceLook);
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

TEST(NodeMachine, AHaltWithRecordsTakesThemOnceAPlainEndDoesNot) {
  FakeProcs procs;
  procs.dumps_until = 5;
  FakeJob job;
  NodeMachine m(Recording(), &procs, &job);
  m.Start(0);
  LinkOrder halt = LinkOrder::Of(LinkOrder::Kind::kEndAttempt);
  halt.records = true;
  job.orders.push_back(halt);
  job.orders.push_back(halt);  // (twice: taken once)
  m.TakeOrders(1);
  EXPECT_EQ(procs.dumps_started, 1);
  EXPECT_EQ(procs.SignalsOf(SIGTERM), 0);
  // The verdict's stop cuts the wait short: what came is sent, the ranks end.
  job.orders.push_back(LinkOrder::Stop(7, "", ""));
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
