// A new root (job_heir.cc, docs/control-plane.md "A new root"): the root's
// record at its heir, the heir's election, and the majority rule, over
// fake ports, frame by frame.
#include <gtest/gtest.h>

#include <csignal>
#include <optional>

#include "shim/control/fake_job_ports.h"
#include "shim/control/job_machine.h"

namespace aml {
namespace {

// 5 shims, the last a spare, 3 restarts; shim 1 is the root's heir.
JobConfig Config(int rank, int size = 5, int spares = 1) {
  return TestConfig(rank, size, 3, spares);
}

// A root's ports with `heir` named, its children still linked and running.
FakePorts LinkedPorts(int heir) {
  FakePorts ports;
  ports.heir = heir;
  ports.children_done = false;
  ports.linked = true;
  return ports;
}

Msg Ended(int shim) {
  Msg m("ended");
  m.Set("shim", shim).Set("host", "h" + std::to_string(shim)).SetNumber("out", 0);
  return m;
}

// Rank 0's record, as it reached shim 1 at the job's start.
std::string RootRecord(int size = 5, int spares = 1) {
  FakePorts root_ports;
  root_ports.heir = 1;
  root_ports.parents = {-1, 0, 0, 1, 2};
  root_ports.parents.resize(static_cast<size_t>(size), 0);
  JobMachine root(Config(0, size, spares), &root_ports);
  root.NoteHost(4, "h4", "10.0.0.4");
  root.Start(0);
  EXPECT_EQ(root_ports.heirs_named, 1);
  EXPECT_EQ(root_ports.to.size(), 1u);
  EXPECT_EQ(root_ports.to.at(0).first, 1);
  EXPECT_EQ(Msg::Decode(root_ports.to.at(0).second)->type(), "record");
  return root_ports.to.at(0).second;
}

// Shim 1, the heir, with rank 0's record; rank 0's shim lost now.
struct Heir {
  FakePorts ports;
  JobMachine m;
  explicit Heir(bool silent, double now = 40, int size = 5, int spares = 1)
      : m(Config(1, size, spares), &ports) {
    ports.children_done = false;
    ports.linked = true;
    m.Start(0);
    m.OnRecord(RootRecord(size, spares));
    EXPECT_TRUE(m.MayTakeOver(true));
    m.OnRootLost(true, silent, "the control plane lost rank 0's shim (closed)", now);
  }
};

TEST(JobHeir, TheRootSendsItsHeirTheRecordAtTheStart) {
  const auto m = Msg::Decode(RootRecord());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->Int("root"), 0);
  EXPECT_EQ(m->Str("host"), "h0");
  EXPECT_EQ(m->Int("n"), 0);
  EXPECT_EQ(m->Str("tree"), "-1,0,0,1,2");
  EXPECT_NE(m->Raw("spares"), nullptr);
}

TEST(JobHeir, ARecordTooLargeForOneFrameLeavesOutTheHostsAndTheTree) {
  FakePorts ports;
  ports.heir = 1;
  JobConfig c = Config(0, 120000, 1);
  ports.parents.assign(120000, 0);
  ports.parents[0] = -1;
  JobMachine root(c, &ports);
  for (int s = 1; s < 120000; ++s) root.NoteHost(s, "gpu-node-" + std::to_string(s));
  root.Start(0);
  ASSERT_EQ(ports.to.size(), 1u);
  const std::string& frame = ports.to[0].second;
  EXPECT_LT(frame.size(), size_t{1} << 20);
  const auto m = Msg::Decode(frame);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->Raw("nodes"), nullptr);
  EXPECT_EQ(m->Str("tree"), "");
  EXPECT_NE(m->Raw("roster"), nullptr);
}

TEST(JobHeir, WithMoreThanHalfTheHeirTakesTheJobAndASpareTakesNodeRankZero) {
  Heir h(false);
  EXPECT_TRUE(h.m.root());
  EXPECT_EQ(h.m.state(), JobState::kElecting);
  // Its ranks and those below end, and every shim says so anew.
  ASSERT_FALSE(h.ports.down.empty());
  EXPECT_EQ(h.ports.down.back().type(), "end");
  EXPECT_EQ(h.ports.down.back().Int("again"), 1);
  h.m.OnChildrenDone({0, 0}, 40.1);
  for (int s : {2, 3}) FromChild(&h.m, Ended(s), 40.2);
  EXPECT_EQ(h.m.state(), JobState::kElecting);  // shim 4, the spare, not yet
  FromChild(&h.m, Ended(4), 40.3);
  // A closed link: no wait for the old root. The restart, with the spare
  // (shim 4) in NODE_RANK 0 and MASTER_ADDR its address.
  ASSERT_EQ(h.ports.down.back().type(), "restart");
  EXPECT_EQ(h.ports.down.back().Str("nodes"), "4,1-3");
  EXPECT_EQ(h.ports.down.back().Str("maddr"), "10.0.0.4");
  EXPECT_EQ(h.m.restarts(), 1);
  EXPECT_EQ(h.m.node(), 1);  // its own NODE_RANK
  EXPECT_EQ(h.m.state(), JobState::kRunning);
  EXPECT_EQ(h.ports.heirs_named, 1);  // it names its own heir
  // It holds the job in a term of its own, and says so to every shim.
  EXPECT_EQ(h.m.term(), 2);
  EXPECT_EQ(h.ports.down.back().Int("term"), 2);
  EXPECT_TRUE(h.m.Stamp().holder);
}

// A root frozen or cut off while its heir took the job hears a word of the
// newer term (a shim that still had its link): it steps down at once and
// writes no record of the job.
TEST(JobHeir, AnOldRootThatHearsANewerTermStepsDown) {
  FakePorts ports = LinkedPorts(1);
  JobMachine root(Config(0), &ports);
  root.Start(0);
  EXPECT_EQ(Msg::Decode(ports.to.at(0).second)->Int("term"), 1);  // its record's term
  FromChild(&root, Msg("ended").Set("shim", 2).Set("term", 2), 50);
  ASSERT_EQ(root.state(), JobState::kStopped);
  auto last = LastOrder(&root);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->exit_code, 125);
  EXPECT_NE(last->message.find("a newer root holds the job (term 2"), std::string::npos)
      << last->message;
  EXPECT_TRUE(last->no_record);
  EXPECT_FALSE(root.root());
  EXPECT_FALSE(root.Stamp().holder);
}

// A shim below learns the newest term from its root's restart: the part
// record it may write later carries it.
TEST(JobHeir, AShimBelowStampsItsRecordsWithTheNewestTermItHeard) {
  FakePorts ports;
  JobMachine shim(Config(3), &ports);
  shim.Start(0);
  EXPECT_EQ(shim.Stamp().term, 1);
  EXPECT_FALSE(shim.Stamp().holder);
  Msg restart("restart");
  restart.Set("n", 1).Set("port", 29501).Set("nodes", "4,1-3").Set("term", 2);
  shim.OnFromParent(restart.Encode(), *Msg::Decode(restart.Encode()), 60);
  EXPECT_EQ(shim.Stamp().term, 2);
  EXPECT_EQ(shim.Stamp().writer, "rank 3's shim on h3");
}

TEST(JobHeir, ANewRootNamesItsOwnHeirWhichCanTakeTheJobFromItInTurn) {
  // 6 shims: NODE_RANKs 0-3, spares 4 and 5.
  Heir h(false, 40, 6, 2);
  h.ports.heir = 2;
  h.m.OnChildrenDone({0, 0}, 40.1);
  for (int s : {2, 3, 4, 5}) FromChild(&h.m, Ended(s), 40.2);
  ASSERT_EQ(h.ports.down.back().Str("nodes"), "4,1-3");
  ASSERT_EQ(h.ports.to.size(), 1u);  // shim 1's record, at shim 2
  EXPECT_EQ(h.ports.to[0].first, 2);
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobMachine next(Config(2, 6, 2), &ports);
  next.Start(0);
  next.OnRecord(h.ports.to[0].second);
  next.OnRootLost(true, false, "the control plane lost rank 1's shim (closed)", 90);
  next.OnChildrenDone({0, 0}, 90.1);
  // Shim 0 was lost before: nobody waits for it.
  for (int s : {3, 4, 5}) FromChild(&next, Ended(s), 90.2);
  EXPECT_TRUE(next.root());
  EXPECT_EQ(next.restarts(), 2);
  next.OnTimer(92);  // the second restart's back-off
  ASSERT_EQ(ports.down.back().type(), "restart");
  EXPECT_EQ(ports.down.back().Int("n"), 2);
  EXPECT_EQ(ports.down.back().Str("nodes"), "4-5,2-3");
  // NODE_RANK 0 stays with shim 4: MASTER_ADDR with it (a second new root
  // knows where from its record; it gave "", rank 0's lost address).
  EXPECT_EQ(ports.down.back().Str("maddr"), "10.0.0.4");
  std::optional<RestartOrder> restart = LastOf<RestartOrder>(&next);
  ASSERT_TRUE(restart);
  EXPECT_NE(restart->message.find("aml-shim: rank 1's shim on h1 was lost"), std::string::npos)
      << restart->message;
  EXPECT_NE(restart->message.find("rank 2's shim on h2 takes the job as its root: 4 of 6"),
            std::string::npos)
      << restart->message;
  // The second new root's term follows the first's record.
  EXPECT_EQ(Msg::Decode(h.ports.to[0].second)->Int("term"), 2);
  EXPECT_EQ(next.term(), 3);
}

TEST(JobHeir, ASilentRootIsWaitedOutBeforeTheHeirTakesTheJob) {
  Heir h(true, 40);
  h.m.OnChildrenDone({0, 0}, 40.1);
  for (int s : {2, 3, 4}) FromChild(&h.m, Ended(s), 40.2);
  EXPECT_EQ(h.m.state(), JobState::kElecting);
  EXPECT_GE(h.m.NextDeadline(41), 40 + 31 - 1e-9);
  h.m.OnTimer(70);
  EXPECT_EQ(h.m.state(), JobState::kElecting);
  h.m.OnTimer(71.1);
  EXPECT_NE(h.m.state(), JobState::kElecting);
  EXPECT_EQ(h.m.restarts(), 1);
}

TEST(JobHeir, HalfOfTheShimsOrFewerIsNoMajority) {
  Heir h(false, 40);
  h.m.OnChildrenDone({0, 0}, 40.1);
  FromChild(&h.m, Ended(2), 40.2);  // 2 of 5 reached the heir
  // Nobody else comes: the wait ends at 30 s + --grace + 30 s.
  h.m.OnTimer(40 + 30 + 2 + 30 + 0.1);
  EXPECT_EQ(h.m.state(), JobState::kStopped);
  auto last = LastOrder(&h.m);
  ASSERT_TRUE(last) << "its last order is a stop";
  EXPECT_EQ(last->exit_code, 125);
  // Without a majority a shim writes no record of the job (its word goes
  // to its own node's file): the old root may hold it.
  EXPECT_NE(last->message.find("no majority"), std::string::npos) << last->message;
  EXPECT_NE(last->message.find("writes no record"), std::string::npos) << last->message;
  EXPECT_TRUE(last->no_record);
  EXPECT_TRUE(last->retired_json.empty()) << last->retired_json;
  EXPECT_FALSE(h.m.Stamp().holder);
}

TEST(JobHeir, ARootThatLostMoreThanHalfEndsItsPart) {
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  ports.below = {{1, {3}}, {2, {4}}};
  JobMachine root(Config(0, 5, 2), &ports);  // NODE_RANKs 0-2, spares 3 and 4
  root.Start(0);
  root.OnShimLost(1, "the control plane lost rank 1's shim (silent for 5.0 s)", true, 40);
  EXPECT_NE(root.state(), JobState::kStopped);  // 2 of 5 lost, the spare 4 left
  root.OnShimLost(2, "the control plane lost rank 2's shim (silent for 5.0 s)", true, 40.1);
  EXPECT_EQ(root.state(), JobState::kStopped);  // 4 of 5
  ASSERT_EQ(ports.down.back().type(), "stop");
  EXPECT_NE(ports.down.back().Str("what").find("no majority"), std::string::npos);
}

// Rank 0's shim frozen a minute, then continued: its children found it
// silent, left it for the heir (each said so before it closed), and the
// heir took the job. The closes it reads on waking, one by one, must not
// read as the job's verdict: the spare's loss leaves a NODE_RANK with no
// spare, but the heir, alive beyond the cut, may hold the job, and more
// than half are lost a moment later: "no majority", and no record (it
// wrote "no spare left" with healthy nodes retired).
TEST(JobHeir, AnOldRootThatLostItsHeirAndTheMajorityWritesNoRecord) {
  FakePorts ports = LinkedPorts(1);
  JobMachine root(Config(0), &ports);  // NODE_RANKs 0-3, the spare 4
  root.Start(0);
  root.OnShimLost(1, "the control plane lost rank 1's shim (closed)", true, 90);
  root.OnShimLost(4, "the control plane lost rank 4's shim (closed)", true, 90.001);
  EXPECT_NE(root.state(), JobState::kStopped);  // no "no spare left" yet
  root.OnShimLost(2, "the control plane lost rank 2's shim (closed)", true, 90.002);
  ASSERT_EQ(root.state(), JobState::kStopped);
  auto last = LastOrder(&root);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->exit_code, 125);
  EXPECT_NE(last->message.find("no majority"), std::string::npos) << last->message;
  EXPECT_NE(last->message.find("writes no record"), std::string::npos) << last->message;
  EXPECT_EQ(last->message.find("no spare"), std::string::npos) << last->message;
  EXPECT_TRUE(last->retired_json.empty()) << last->retired_json;
  EXPECT_TRUE(last->attempts_json.empty()) << last->attempts_json;
  EXPECT_TRUE(last->failure_json.empty()) << last->failure_json;
  ASSERT_EQ(ports.down.back().type(), "stop");
  EXPECT_NE(ports.down.back().Str("what").find("no majority"), std::string::npos);
}

// The same losses with the heir's process gone (its link closed, no word
// that it left): nobody else holds a record, so the root's verdict is the
// job's, written at once.
TEST(JobHeir, ARootWhoseHeirDiedWritesTheJobsRecord) {
  FakePorts ports = LinkedPorts(1);
  JobMachine root(Config(0), &ports);
  root.Start(0);
  root.OnShimLost(1, "the control plane lost rank 1's shim (closed)", false, 90);
  root.OnShimLost(4, "the control plane lost rank 4's shim (closed)", false, 90.001);
  ASSERT_EQ(root.state(), JobState::kStopped);
  auto last = LastOrder(&root);
  ASSERT_TRUE(last);
  EXPECT_NE(last->why_not.find("no spare left"), std::string::npos) << last->why_not;
  EXPECT_NE(last->retired_json.find("\"shim\":4"), std::string::npos) << last->retired_json;
}

// Seven shims: the root's children are 4 (its heir, over 1 and 6) and 3
// (over 2 and 5). When 5 is cut off too and the root has lost more than
// half, it ends its part and writes no record of the job, whoever may hold
// it (before, it wrote the job's when it judged that no heir could: a root
// cut off whose link healed wrote a failed job's record into the shared
// log dir while its heir's side finished the job, issue 63).
TEST(JobHeir, ARootWithoutAMajorityWritesNoRecordEvenWhenNoHeirCouldHoldTheJob) {
  FakePorts ports = LinkedPorts(4);
  ports.parents = {-1, 4, 3, 0, 0, 3, 4};
  ports.below = {{4, {1, 6}}, {3, {2, 5}}};
  JobMachine root(Config(0, 7, 1), &ports);
  root.Start(0);
  EXPECT_TRUE(root.Stamp().holder);
  EXPECT_EQ(root.Stamp().term, 1);
  root.OnShimLost(4, "the control plane lost rank 4's shim (silent for 5.0 s)", true, 44);
  FromChild(&root, Msg("lost").Set("shim", 5).Set("what", "the control plane lost rank 5's shim "
                                                          "(silent for 5.0 s)"),
            44.01);
  ASSERT_EQ(root.state(), JobState::kStopped);
  auto last = LastOrder(&root);
  ASSERT_TRUE(last);
  EXPECT_NE(last->message.find("no majority"), std::string::npos) << last->message;
  EXPECT_NE(last->message.find("writes no record"), std::string::npos) << last->message;
  EXPECT_TRUE(last->no_record);
  EXPECT_TRUE(last->retired_json.empty()) << last->retired_json;
  EXPECT_TRUE(last->attempts_json.empty()) << last->attempts_json;
  EXPECT_FALSE(root.Stamp().holder);
}

// The heir lost beyond a cut, with a NODE_RANK left without a spare, and
// nothing else lost: the verdict waits until every loss of that cut would
// have been found (kMaxSilenceS and a second), then is "no spare left".
TEST(JobHeir, NoSpareLeftWaitsOutALostHeirsCut) {
  FakePorts ports = LinkedPorts(1);
  JobMachine root(Config(0), &ports);
  root.Start(0);
  root.OnShimLost(4, "the control plane lost rank 4's shim (silent for 5.0 s)", true, 90);
  root.OnShimLost(1, "the control plane lost rank 1's shim (silent for 5.0 s)", true, 90.5);
  EXPECT_NE(root.state(), JobState::kStopped);
  // The attempt ends (its ranks halted now), and the round completes.
  ASSERT_EQ(ports.down.back().type(), "halt");
  root.OnTimer(90.7);
  root.OnChildrenDone({0, 0}, 90.8);
  for (int s : {2, 3}) FromChild(&root, Ended(s), 90.9);
  root.OnTimer(95);
  EXPECT_NE(root.state(), JobState::kStopped);
  EXPECT_LE(root.NextDeadline(95), 90.5 + 30 + 1);
  root.OnTimer(90.5 + 30 + 1);
  ASSERT_EQ(root.state(), JobState::kStopped);
  auto last = LastOrder(&root);
  ASSERT_TRUE(last);
  EXPECT_NE(last->why_not.find("no spare left"), std::string::npos) << last->why_not;
}

// A heir that reached too few shims, its root silent (alive, maybe, with
// half of the shims or more): the record is the root's to write, not its.
TEST(JobHeir, AHeirWithoutAMajorityWhoseRootMayHoldTheJobWritesNoRecord) {
  Heir h(true);
  h.m.OnChildrenDone({0, 0}, 40.1);
  FromChild(&h.m, Ended(3), 40.2);  // shim 1 and 3 of 5: the root may hold 0, 2, 4
  h.m.OnTimer(40 + 30 + 2 + 30 + 0.1);
  EXPECT_EQ(h.m.state(), JobState::kStopped);
  auto last = LastOrder(&h.m);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->exit_code, 125);
  EXPECT_NE(last->message.find("no majority"), std::string::npos) << last->message;
  EXPECT_TRUE(last->retired_json.empty()) << last->retired_json;
  EXPECT_TRUE(last->attempts_json.empty()) << last->attempts_json;
}

// mpirun ends every process once rank 0's is lost: the heir, electing,
// holds the record, and writes why the job ended (no shim did).
TEST(JobHeir, AHeirStoppedByItsLauncherWhileElectingWritesTheJobsRecord) {
  Heir h(false);
  h.m.OnShimSignalled(SIGTERM, "", 40.05);
  auto last = LastOrder(&h.m);
  ASSERT_TRUE(last) << "its last order is a stop";
  EXPECT_EQ(last->exit_code, 143);
  EXPECT_NE(last->message.find("the control plane lost rank 0's shim (closed)"),
            std::string::npos) << last->message;
  EXPECT_NE(last->message.find("was taking its place when the job was stopped: its launcher sent "
                               "rank 1's shim on h1 SIGTERM"),
            std::string::npos)
      << last->message;
  EXPECT_NE(last->failure_json.find("\"exit_code\":143"), std::string::npos);
  EXPECT_NE(last->attempts_json.find("\"exit_code\":125"), std::string::npos)
      << last->attempts_json;
  EXPECT_NE(last->why_not.find("the job was stopped from outside"), std::string::npos);
  EXPECT_NE(last->retired_json.find("\"shim\":0"), std::string::npos) << last->retired_json;
}

// After the takeover, another shim's launcher stopped it ("bye"): the new
// root's record says so, after the attempt that lost rank 0's shim.
TEST(JobHeir, ANewRootStoppedFromOutsideWritesTheJobsRecord) {
  Heir h(false);
  h.m.OnChildrenDone({0, 0}, 40.1);
  for (int s : {2, 3, 4}) FromChild(&h.m, Ended(s), 40.2);
  ASSERT_EQ(h.m.state(), JobState::kRunning);
  LastOrder(&h.m);
  FromChild(&h.m, Msg("bye").Set("what", "rank 3's shim on h3 was stopped by its launcher "
                                         "(SIGTERM)").Set("code", 143),
            45);
  auto last = LastOrder(&h.m);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->exit_code, 143);
  EXPECT_NE(last->message.find("rank 0's shim on h0 was lost and rank 1's shim on h1 took its "
                               "place; then the job was stopped: rank 3's shim"),
            std::string::npos)
      << last->message;
  EXPECT_NE(last->failure_json.find("\"exit_code\":143"), std::string::npos);
  EXPECT_NE(last->attempts_json.find("\"exit_code\":125"), std::string::npos);
  EXPECT_NE(last->attempts_json.find("\"exit_code\":143"), std::string::npos);
}

// A shim lost after the root's last record: the root says so to its heir,
// which neither waits for it at its election (it waited until the
// deadline, 62 s) nor gives it a place (a spare lost is no spare).
TEST(JobHeir, TheHeirHearsOfTheLossesAfterItsRecord) {
  FakePorts root_ports;
  root_ports.heir = 1;
  root_ports.children_done = false;
  root_ports.linked = true;
  JobMachine root(Config(0, 6, 2), &root_ports);  // NODE_RANKs 0-3, spares 4 and 5
  root.NoteHost(4, "h4", "10.0.0.4");
  root.NoteHost(5, "h5", "10.0.0.5");
  root.Start(0);
  root.OnShimLost(4, "the control plane lost rank 4's shim on h4 (closed)", false, 10);
  ASSERT_EQ(root_ports.to.size(), 2u);
  EXPECT_EQ(Msg::Decode(root_ports.to[1].second)->type(), "gone");
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobMachine heir(Config(1, 6, 2), &ports);
  heir.Start(0);
  heir.OnRecord(root_ports.to[0].second);
  heir.OnGone(root_ports.to[1].second);
  heir.OnRootLost(true, false, "the control plane lost rank 0's shim (closed)", 40);
  heir.OnChildrenDone({0, 0}, 40.1);
  for (int s : {2, 3, 5}) FromChild(&heir, Ended(s), 40.2);
  // Taken at once (nothing waits for shim 4); NODE_RANK 0 to shim 5.
  ASSERT_EQ(ports.down.back().type(), "restart");
  EXPECT_EQ(ports.down.back().Str("nodes"), "5,1-3");
  EXPECT_EQ(ports.down.back().Str("maddr"), "10.0.0.5");
}

TEST(JobHeir, NoHeirTakesOverWithoutARecordOrARestartLeft) {
  FakePorts ports;
  JobMachine m(Config(1), &ports);
  m.Start(0);
  EXPECT_FALSE(m.MayTakeOver(true));  // no record yet
  EXPECT_TRUE(m.MayTakeOver(false));
  JobConfig c = Config(1);
  c.max_restarts = 0;
  FakePorts p2;
  JobMachine spent(c, &p2);
  spent.Start(0);
  spent.OnRecord(RootRecord());
  EXPECT_FALSE(spent.MayTakeOver(true));
  EXPECT_TRUE(spent.MayTakeOver(false)) << "a child moves below the heir all the same";
}

TEST(JobHeir, AShimThatLostTheRootGoesOnUntilTheHeirsElectionAsksItToEnd) {
  // Its link to the root fell silent (a frozen root, or only that link
  // cut): linked to the heir, it says so and its ranks run on; only the
  // heir's election ("end" again) ends them (before, it ended them at once
  // and the heir stopped it with 125: a frozen root on a busy node lost the
  // job).
  FakePorts ports;
  JobMachine orphan(Config(2), &ports);
  orphan.Start(0);
  orphan.OnRootLost(false, true, "the control plane lost rank 0's shim (silent for 6.0 s)", 30);
  ASSERT_EQ(ports.up.size(), 1u);
  EXPECT_EQ(ports.up[0].type(), "orphan");
  EXPECT_EQ(ports.up[0].Int("silent"), 1);
  EXPECT_EQ(orphan.state(), JobState::kRunning);
  EXPECT_FALSE(orphan.TakeOrder()) << "its ranks run on";
  FromParent(&orphan, Msg("end").Set("again", 1), 55);
  EXPECT_EQ(orphan.state(), JobState::kEnding);
  auto order = orphan.TakeOrder();
  ASSERT_TRUE(order);
  EXPECT_TRUE(std::holds_alternative<EndAttemptOrder>(*order));
}

TEST(JobHeir, AnElectingHeirAsksAShimThatLinksToItToEndItsRanks) {
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobMachine heir(Config(1), &ports);
  heir.Start(0);
  heir.OnRecord(RootRecord());
  heir.OnRootLost(true, true, "the control plane lost rank 0's shim (silent for 6.0 s)", 40);
  ASSERT_EQ(heir.state(), JobState::kElecting);
  Msg orphan("orphan");
  orphan.Set("shim", 2).Set("silent", 1);
  FromChild(&heir, orphan, 41);
  ASSERT_EQ(ports.to.size(), 1u);
  EXPECT_EQ(ports.to[0].first, 2);
  const auto end = Msg::Decode(ports.to[0].second);
  EXPECT_EQ(end->type(), "end");
  EXPECT_EQ(end->Int("again"), 1);
  // Its silence: not before 31 s after it found the root so.
  EXPECT_GE(heir.NextDeadline(41), 41 + 31 - 1e-9);
}

TEST(JobHeir, ARootWhoseHeirHoldsTheElectionStepsDownWritingNothing) {
  FakePorts ports;
  JobMachine root(Config(0), &ports);
  root.Start(0);
  ASSERT_TRUE(root.root());
  root.StepDown("no majority: rank 1's shim on h1, this shim's heir, found it silent", 70);
  EXPECT_FALSE(root.root()) << "it is not the job's root any more";
  EXPECT_EQ(root.state(), JobState::kStopped);
  auto order = LastOf<StopOrder>(&root);
  ASSERT_TRUE(order);
  EXPECT_EQ(order->exit_code, 125);
  EXPECT_TRUE(order->no_record);
  EXPECT_TRUE(order->failure_json.empty());
  EXPECT_TRUE(order->attempts_json.empty());
  EXPECT_TRUE(ports.down.empty()) << "no verdict is sent: its children link to the heir";
}

TEST(JobHeir, AShimThatFoundTheRootLostBeforeTheHeirCountsInTheElection) {
  // Bench/spare_latency.py, node 1 lost: shim 2 saw the root's link close
  // and linked to the heir before the heir read its own close.
  FakePorts ports;
  ports.children_done = false;
  ports.linked = true;
  JobMachine heir(Config(1), &ports);
  heir.Start(0);
  heir.OnRecord(RootRecord());
  Msg orphan("orphan");
  orphan.Set("shim", 2).Set("silent", 0);
  FromChild(&heir, orphan, 40);
  FromChild(&heir, Ended(2), 40.001);  // to the old root: lost with it
  heir.OnRootLost(true, false, "the control plane lost rank 0's shim (closed)", 40.002);
  heir.OnTimer(40.002);
  EXPECT_TRUE(ports.to.empty());  // not stopped
  // Asked anew ("end" again), shim 2 says so again, with shims 3 and 4.
  heir.OnChildrenDone({0, 0}, 40.1);
  for (int s : {2, 3, 4}) FromChild(&heir, Ended(s), 40.2);
  ASSERT_EQ(ports.down.back().type(), "restart");
  EXPECT_EQ(heir.restarts(), 1);
}

}  // namespace
}  // namespace aml
