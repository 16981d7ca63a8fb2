// The node's machine with --warm-restart (warm_slots.h): when standbys are
// made, which rank of a restart starts from one, and that none outlives the
// job or a retired node.
#include "launch/node_machine.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "launch/node_machine_fakes.h"

namespace aml {
namespace {

using namespace node_test;  // NOLINT: the doubles of this suite

NodeConfig Warm() {
  NodeConfig c = Two();
  c.warm = true;
  return c;
}

// Both ranks fail and end at `t`; a restart is ordered (with `roster`:
// this node's NODE_RANK in it) and started.
void FailAndRestart(NodeMachine* m, FakeJob* job, double t, int restart,
                    std::optional<int> roster = std::nullopt) {
  m->OnExit(0, Exited(7), t);
  m->OnExit(1, SIGTERM, t);
  m->Step(t);
  RestartOrder r;
  r.restart = restart;
  if (roster) {
    r.roster = true;
    r.node_rank = *roster;
  }
  job->orders.push_back(r);
  m->TakeOrders(t);
  m->Step(t);
}

// The first attempt started at 0: both standbys made at once.
void StartWithStandbys(NodeMachine* m, FakeProcs* procs) {
  m->Start(0);
  m->Step(0);
  ASSERT_EQ(procs->made, (std::vector<size_t>{0, 1}));
}

// Issue 64: a failure 1 s after the first step (7 s in) restarted cold,
// the standbys made only 10 s after the attempt's start.
TEST(NodeMachineWarm, ARestartsRanksStartFromTheirStandbysWhateverTheMomentOfTheFailure) {
  FakeProcs procs;
  FakeJob job;
  job.may_exit = false;
  NodeMachine m(Warm(), &procs, &job);
  m.Start(0);
  EXPECT_EQ(m.NextDeadline(0), 0) << "made as the ranks start";
  m.Step(0);
  EXPECT_EQ(procs.made, (std::vector<size_t>{0, 1}));
  FailAndRestart(&m, &job, 1, 1);
  ASSERT_EQ(m.state(), NodeState::kRunning);
  EXPECT_EQ(procs.from_standby, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(m.warm_started(), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(m.cold_started().empty());
  // Said to the job (rank 0 sums the job's): once, as the ranks started.
  EXPECT_EQ(job.warm_starts, (std::vector<std::pair<int, int>>{{2, 0}}));
  // The next restart's standbys, as this one is under way: a failure at
  // once again finds them.
  m.Step(1);
  EXPECT_EQ(procs.made.size(), 4u);
  FailAndRestart(&m, &job, 1.5, 2);
  EXPECT_EQ(m.warm_started(), (std::vector<size_t>{0, 1}));
}

TEST(NodeMachineWarm, LateStandbysAreMadeAfterTheRanksStartUp) {
  FakeProcs procs;
  FakeJob job;
  job.may_exit = false;
  NodeConfig c = Warm();
  c.warm_late = true;
  NodeMachine m(c, &procs, &job);
  m.Start(0);
  EXPECT_EQ(m.NextDeadline(0), WarmSlots::kAfterS);
  m.Step(5);
  EXPECT_TRUE(procs.made.empty()) << "not beside the ranks' own start-up";
  m.Step(WarmSlots::kAfterS);
  EXPECT_EQ(procs.made, (std::vector<size_t>{0, 1}));
  // A restart 3 s into the next attempt: none made yet, cold, said why.
  FailAndRestart(&m, &job, 20, 1);
  FailAndRestart(&m, &job, 23, 2);
  EXPECT_TRUE(m.warm_started().empty());
  ASSERT_EQ(m.cold_started().size(), 2u);
  EXPECT_NE(m.cold_started()[0].second.find("not started yet"), std::string::npos);
}

TEST(NodeMachineWarm, AStandbyThatEndedOrRefusedOrWasNotMadeYetStartsItsRankCold) {
  FakeProcs procs;
  FakeJob job;
  job.may_exit = false;
  NodeMachine m(Warm(), &procs, &job);
  StartWithStandbys(&m, &procs);
  m.OnStandbyGone(1, "its standby (pid 77) ended: killed by SIGKILL");
  FailAndRestart(&m, &job, 20, 1);
  EXPECT_EQ(m.warm_started(), (std::vector<size_t>{0}));
  ASSERT_EQ(m.cold_started().size(), 1u);
  EXPECT_EQ(m.cold_started()[0].first, 1u);
  EXPECT_EQ(m.cold_started()[0].second, "its standby (pid 77) ended: killed by SIGKILL");
  // One that refuses its order: cold, with its words.
  m.Step(20);
  FailAndRestart(&m, &job, 23, 2);
  EXPECT_EQ(m.warm_started(), (std::vector<size_t>{0, 1}));
  m.Step(23);
  procs.refuse = true;
  FailAndRestart(&m, &job, 40, 3);
  EXPECT_TRUE(m.warm_started().empty());
  ASSERT_EQ(m.cold_started().size(), 2u);
  EXPECT_EQ(m.cold_started()[1].second, "it refused");
  EXPECT_EQ(job.warm_starts, (std::vector<std::pair<int, int>>{{1, 1}, {2, 0}, {0, 2}}));
}

TEST(NodeMachineWarm, ASparesStandbysAreReadyAsSoonAsItAndTheJobsEndEndsThem) {
  FakeProcs procs;
  FakeJob job;
  NodeConfig c = Warm();
  c.standby = true;
  NodeMachine m(c, &procs, &job);
  m.Start(0);
  EXPECT_EQ(procs.starts, 0);
  m.Step(0);
  EXPECT_EQ(procs.made, (std::vector<size_t>{0, 1}));
  m.OnSignal(SIGTERM, 42, 15);
  while (m.Step(m.NextDeadline(15))) {
  }
  EXPECT_EQ(m.state(), NodeState::kDone);
  EXPECT_EQ(procs.ended_standbys, (std::vector<size_t>{0, 1})) << "none outlives the shim";
}

TEST(NodeMachineWarm, ARetiredNodesStandbysEndAndNoneIsMadeAgain) {
  FakeProcs procs;
  FakeJob job;
  job.may_exit = false;
  NodeMachine m(Warm(), &procs, &job);
  StartWithStandbys(&m, &procs);
  FailAndRestart(&m, &job, 20, 1, -1);  // retired: NODE_RANK -1
  EXPECT_EQ(procs.starts, 2) << "no rank of it starts again";
  EXPECT_TRUE(job.warm_starts.empty()) << "no rank started: nothing to say";
  EXPECT_EQ(procs.ended_standbys, (std::vector<size_t>{0, 1}));
  m.Step(20 + WarmSlots::kAfterS);
  EXPECT_EQ(procs.made.size(), 2u);
}

}  // namespace
}  // namespace aml
