// The running links (tree_links.h) over a fake carrier: what the real
// overlay's links decide, frame by frame, above the job's machine. Here:
// the root's heir, and a new root's heir, named from where each child said
// it listens (a new root has no planner: the join's addresses are rank
// 0's alone).
#include "shim/control/tree_links.h"

#include <gtest/gtest.h>

#include <map>

#include "shim/control/fake_job_ports.h"

namespace aml {
namespace {

struct FakeIo : LinkIo {
  std::map<int, std::vector<std::string>> sent;  // by peer, in order
  void Send(int peer, const std::string& frame) override { sent[peer].push_back(frame); }
  bool Open(int peer) const override { return peer >= 0; }
  bool Pending(int) const override { return false; }
  double WallNow() const override { return 1000; }
  int FreePort() const override { return 4242; }
  std::vector<int> Below(int) const override { return {}; }
  // Frames of `type` sent to `peer`.
  std::vector<Msg> Of(int peer, const std::string& type) const {
    std::vector<Msg> out;
    auto it = sent.find(peer);
    if (it == sent.end()) return out;
    for (const std::string& f : it->second)
      if (Msg::Decode(f)->type() == type) out.push_back(*Msg::Decode(f));
    return out;
  }
  // The same frames as sent (a decoded Msg encodes only what is set on it).
  std::vector<std::string> RawOf(int peer, const std::string& type) const {
    std::vector<std::string> out;
    auto it = sent.find(peer);
    if (it == sent.end()) return out;
    for (const std::string& f : it->second)
      if (Msg::Decode(f)->type() == type) out.push_back(f);
    return out;
  }
};

Msg Ended(int shim) {
  Msg m("ended");
  m.Set("shim", shim).Set("host", "h" + std::to_string(shim)).SetNumber("out", 0);
  return m;
}

// Five shims, NODE_RANKs 0-3 and a spare (4), 3 restarts. The join's tree:
// rank 0 over 1, 2 and 4; shim 1 over 3.
TEST(TreeLinks, ANewRootNamesItsHeirFromWhereItsChildrenListen) {
  FakeIo root_io, io;
  TreeLinks root(TestConfig(0, 5, 3, 1), &root_io, 1, 30);
  root.AddChild(1, "h1", "10.0.0.1:1025", 0);
  root.AddChild(2, "h2", "10.0.0.2:1026", 0);
  root.AddChild(4, "h4", "10.0.0.4:1028", 0);
  root.Start(0);
  // The root's heir: its first child, at the address its hello gave.
  ASSERT_EQ(root_io.Of(2, "heir").size(), 1u);
  EXPECT_EQ(root_io.Of(2, "heir")[0].Int("shim"), 1);
  EXPECT_EQ(root_io.Of(2, "heir")[0].Str("addr"), "10.0.0.1:1025");
  ASSERT_EQ(root_io.Of(1, "record").size(), 1u);

  // Shim 1, the heir, hears both; then the root's link closes.
  TreeLinks heir(TestConfig(1, 5, 3, 1), &io, 1, 30);
  heir.SetParent(0, "10.0.0.0:1024");
  heir.AddChild(3, "h3", "10.0.0.3:1027", 0);
  heir.Start(0);
  for (const std::string& f : root_io.sent[1]) heir.OnParentFrame(f, 1);
  heir.OnParentClosed("closed", 40);
  EXPECT_EQ(heir.machine().state(), JobState::kElecting);
  // The root's other children link here (plane.cc: a hello, then their words).
  heir.AddChild(2, "h2", "10.0.0.2:1026", 40.01);
  heir.AddChild(4, "h4", "10.0.0.4:1028", 40.01);
  for (int s : {2, 4})
    heir.OnChildFrame(s, Msg("orphan").Set("shim", s).Set("silent", 0).Encode(), 40.02);
  heir.machine().OnChildrenDone({0, 0}, 40.1);
  for (int s : {2, 3, 4}) heir.OnChildFrame(s, Ended(s).Encode(), 40.2);
  // It took the job (4 of 5 shims): the restart, and its own heir named,
  // its first child (from the join), where that one listens.
  ASSERT_EQ(io.Of(3, "restart").size(), 1u);
  EXPECT_EQ(io.Of(3, "restart")[0].Str("nodes"), "4,1-3");
  for (int s : {2, 3, 4}) {
    ASSERT_EQ(io.Of(s, "heir").size(), 1u) << "shim " << s;
    EXPECT_EQ(io.Of(s, "heir")[0].Int("shim"), 3);
    EXPECT_EQ(io.Of(s, "heir")[0].Str("addr"), "10.0.0.3:1027");
  }
  EXPECT_EQ(io.Of(3, "record").size(), 1u);
}

// A loss a child passed up may have reached the lost root alone: when the
// child links to the heir it says it again, else the heir would wait for
// that shim until its election's deadline.
struct RelinkIo : FakeIo {
  bool Relink(int, const std::string&, double) override { return true; }
};

// Shim 2 of five under rank 0 (beside shim 1, the root's heir), with
// `kids` of its own, told by the root who the heir is.
struct UnderTheRoot {
  FakeIo root_io;
  TreeLinks root{TestConfig(0, 5, 3, 1), &root_io, 1, 30};
  RelinkIo io;
  TreeLinks child{TestConfig(2, 5, 3, 1), &io, 1, 30};
  explicit UnderTheRoot(const std::vector<int>& kids = {}) {
    root.AddChild(1, "h1", "10.0.0.1:1025", 0);
    root.AddChild(2, "h2", "10.0.0.2:1026", 0);
    root.Start(0);
    child.SetParent(0, "10.0.0.0:1024");
    for (int k : kids)
      child.AddChild(k, "h" + std::to_string(k), "10.0.0." + std::to_string(k) + ":1027", 0);
    child.Start(0);
    for (const std::string& f : root_io.sent[2]) child.OnParentFrame(f, 1);
  }
};

TEST(TreeLinks, AChildThatLinksToTheHeirSaysAgainTheLossesItPassedUp) {
  // Shim 2, over shim 3 here, hears of the heir (shim 1), then loses 3.
  UnderTheRoot t({3});
  TreeLinks& child = t.child;
  RelinkIo& io = t.io;
  child.OnChildClosed(3, "closed", 10);
  ASSERT_EQ(io.Of(0, "lost").size(), 1u);
  EXPECT_EQ(io.Of(0, "lost")[0].Int("shim"), 3);
  // The root's link closes: shim 2 links to the heir and says it again.
  child.OnParentClosed("closed", 20);
  ASSERT_EQ(io.Of(1, "lost").size(), 1u);
  EXPECT_EQ(io.Of(1, "lost")[0].Int("shim"), 3);
}

TEST(TreeLinks, AHeirLostAfterItTookTheLinkLeavesTheRecordAsIfLostWithTheRoot) {
  // The root's link closes, the heir welcomes shim 2, then the heir is
  // lost before it names a heir of its own: shim 2 ends its part and writes
  // why (test_new_root, the root and its heir killed at once on a loaded
  // node: no shim wrote failure.json).
  UnderTheRoot t;
  TreeLinks& child = t.child;
  child.OnParentClosed("closed", 20);
  EXPECT_EQ(child.parent(), 1);
  child.OnParentClosed("closed", 20.5);
  auto order = LastOf<StopOrder>(&child.machine());
  ASSERT_TRUE(order);
  EXPECT_EQ(order->exit_code, 125);
  EXPECT_EQ(order->message,
            "aml-shim: lost the control plane: the link to its parent, rank 0's shim at "
            "10.0.0.0:1024, closed (and its heir, rank 1's shim at 10.0.0.1:1025, did not take "
            "this shim: it was lost too, closed); ending this node's ranks\n");
  EXPECT_FALSE(order->failure_json.empty()) << "it writes why the job ended";
}

// The root's heir (shim 1) under the same root, told what the root tells it,
// its carrier an `Io`.
template <typename Io>
struct HeirUnderTheRoot : UnderTheRoot {
  Io heir_io;
  TreeLinks heir{TestConfig(1, 5, 3, 1), &heir_io, 1, 30};
  HeirUnderTheRoot() {
    heir.SetParent(0, "10.0.0.0:1024");
    heir.Start(0);
    for (const std::string& f : root_io.sent[1]) heir.OnParentFrame(f, 1);
  }
};

struct HeirToo : HeirUnderTheRoot<FakeIo> {
  // Shim 2 finds the root silent (only its own link: the heir hears the
  // root still) and links to the heir, which takes it in.
  void OrphanLinksToTheHeir(double now) {
    child.OnTimer(now);
    ASSERT_EQ(child.parent(), 1);
    heir.AddChild(2, "h2", "10.0.0.2:1026", now);
    for (const std::string& f : io.RawOf(1, "orphan")) heir.OnChildFrame(2, f, now + 0.01);
  }
};

TEST(TreeLinks, AChildThatLostTheRootStaysInTheJobBelowTheHeirWhileTheRootLives) {
  HeirToo t;
  t.OrphanLinksToTheHeir(40);
  EXPECT_EQ(t.io.Of(0, "left").size(), 1u) << "the root reads that it left alive";
  EXPECT_EQ(t.child.machine().state(), JobState::kRunning) << "its ranks run on";
  // The heir keeps it (before: stopped with 125 at once) and tells the root.
  EXPECT_TRUE(t.heir.Keeps(2));
  EXPECT_TRUE(t.heir_io.Of(2, "stop").empty());
  ASSERT_EQ(t.heir_io.Of(0, "moved").size(), 1u);
  EXPECT_EQ(t.heir_io.Of(0, "moved")[0].Int("shim"), 2);
  // The root: its link to shim 2 closes after "left"; the heir's word comes.
  t.root.OnChildFrame(2, t.io.RawOf(0, "left")[0], 40);
  t.root.OnChildClosed(2, "closed", 40);
  t.root.OnChildFrame(1, t.heir_io.RawOf(0, "moved")[0], 40.05);
  t.root.OnChildFrame(1, Msg("beat").Encode(), 40 + kRelinkS + 1);  // (the heir beats on)
  t.root.OnTimer(40 + kRelinkS + 1);
  EXPECT_EQ(t.root.machine().state(), JobState::kRunning) << "nothing of the job was lost";
  EXPECT_FALSE(t.root.Keeps(2)) << "it is the heir's child now";
  // The root's words reach it through the heir.
  t.heir.OnParentFrame(Msg("halt").Encode(), 41);
  EXPECT_EQ(t.heir_io.Of(2, "halt").size(), 1u);
  // The heir finds the root lost too: shim 2 is in its election, asked to
  // end its ranks as every shim below the heir is.
  t.heir.OnParentClosed("closed", 60);
  EXPECT_EQ(t.heir.machine().state(), JobState::kElecting);
  ASSERT_FALSE(t.heir_io.Of(2, "end").empty());
  EXPECT_EQ(t.heir_io.Of(2, "end").back().Int("again"), 1);
}

TEST(TreeLinks, ARootLosesAChildThatLeftForTheHeirOnlyWhenTheHeirNeverSaysItCame) {
  HeirToo t;
  t.root.OnChildFrame(2, Msg("left").Set("silent", 1).Encode(), 40);
  t.root.OnChildClosed(2, "closed", 40);
  // (The heir beats on, and the root's loop runs every second: a root whose
  // loop ran nothing for seconds was paused, and hears its links anew.)
  for (double now = 41; now < 40 + kRelinkS - 0.1; now += 1) {
    t.root.OnChildFrame(1, Msg("beat").Encode(), now);
    t.root.OnTimer(now);
  }
  t.root.OnChildFrame(1, Msg("beat").Encode(), 40 + kRelinkS - 0.1);
  t.root.OnTimer(40 + kRelinkS - 0.1);
  EXPECT_EQ(t.root.machine().state(), JobState::kRunning);
  EXPECT_TRUE(t.root_io.Of(1, "gone").empty());
  t.root.OnTimer(40 + kRelinkS);
  EXPECT_FALSE(t.root.Keeps(2));
  ASSERT_EQ(t.root_io.Of(1, "gone").size(), 1u) << "lost: the heir hears of it";
  EXPECT_NE(t.root_io.Of(1, "gone")[0].Str("what").find("which did not say it came"),
            std::string::npos);
}

// Shim 2's beat to the root at `at`, saying it finds its parent silent
// after `allowance` seconds (its start-up over).
std::string BeatSaying(double allowance) {
  return Msg("beat").SetNumber("age", 0).SetNumber("al", allowance).SetNumber("su", 0).Encode();
}

TEST(TreeLinks, ARootAwaitsASilentChildBelowTheHeirAsLongAsTheChildGivesTheRoot) {
  // The link between the root and shim 2 alone is cut (both alive, the
  // heir hears both). Before: the root counted shim 2 lost at its first
  // finding of silence and, when the move's word came, stopped it (125):
  // a healthy node lost to a link fault (issue 49).
  HeirToo t;
  t.root.OnChildFrame(2, BeatSaying(5), 34);  // its last frame through the cut link
  t.root.OnChildFrame(1, Msg("beat").Encode(), 39);
  t.root.OnTimer(39.5);  // silent 5.5 s: past the root's allowance
  EXPECT_TRUE(t.root.Keeps(2)) << "awaited: it finds the root silent in turn";
  EXPECT_TRUE(t.root_io.Of(1, "gone").empty());
  EXPECT_LE(t.root.NextDeadline(39.5), 34 + 1 + 5 + kRelinkS);
  t.OrphanLinksToTheHeir(40);
  t.root.OnChildFrame(1, t.heir_io.RawOf(0, "moved")[0], 40.05);
  // (The heir beats every second, and the root's loop runs as often: a
  // root whose loop ran nothing for seconds was paused: wake_gate.h.)
  for (double now = 41; now <= 60; now += 1) {
    t.root.OnChildFrame(1, Msg("beat").SetNumber("ts", 1000).Encode(), now);
    t.root.OnTimer(now);
  }
  EXPECT_EQ(t.root.machine().state(), JobState::kRunning) << "nothing of the job was lost";
  EXPECT_TRUE(t.root_io.Of(1, "drop").empty()) << "not stopped where it is";
  EXPECT_TRUE(t.root_io.Of(1, "gone").empty());
  EXPECT_TRUE(t.heir.Keeps(2));
  EXPECT_EQ(t.child.machine().state(), JobState::kRunning) << "its ranks run on";
}

TEST(TreeLinks, AChildThatMovedBelowTheHeirHearsTheRootsWordsItsCutLinkLost) {
  // The root halts the attempt (a rank failed on the heir's node) while its
  // link to shim 2 is cut: the halt never reaches shim 2. Once shim 2 moved
  // below the heir, the root says it again, through the heir, to shim 2
  // alone. Before, shim 2's ranks ran on in an attempt the job had ended
  // (aml-plane-sim, seed 852089517: a restart lost so, the job waited for
  // its node's word until the simulation's end).
  HeirToo t;
  t.root.OnChildFrame(2, BeatSaying(5), 34);
  t.root.OnChildFrame(1,
                      Msg("fail").SetNumber("time", 35).Set("rank", 1).Set("node", 1)
                          .Set("code", 1).Set("shim", 1).Set("host", "h1").Encode(),
                      35);
  ASSERT_EQ(t.root_io.Of(2, "halt").size(), 1u) << "sent into the cut link";
  EXPECT_EQ(t.child.machine().state(), JobState::kRunning);
  t.OrphanLinksToTheHeir(40);
  t.root.OnChildFrame(1, t.heir_io.RawOf(0, "moved")[0], 40.05);
  ASSERT_EQ(t.root_io.Of(1, "to").size(), 1u);
  EXPECT_EQ(t.root_io.Of(1, "to")[0].Int("shim"), 2);
  const size_t before = t.heir_io.Of(2, "halt").size();
  t.heir.OnParentFrame(t.root_io.RawOf(1, "to")[0], 40.1);
  ASSERT_EQ(t.heir_io.Of(2, "halt").size(), before + 1) << "to shim 2 alone";
  t.child.OnParentFrame(t.heir_io.RawOf(2, "halt").back(), 40.15);
  EXPECT_EQ(t.child.machine().state(), JobState::kHalted);
  // A "to" for a shim the heir does not hold goes nowhere.
  t.heir.OnParentFrame(Msg("to").Set("shim", 4).Set("f", Msg("halt").Encode()).Encode(), 41);
  EXPECT_TRUE(t.heir_io.Of(4, "halt").empty());
}

TEST(TreeLinks, ASilentChildThatNeverComesBelowTheHeirIsLostAfterItsAllowanceAndARelink) {
  HeirToo t;
  // A loaded start-up gave shim 2 a long allowance for the root: 20 s.
  t.root.OnChildFrame(2, BeatSaying(20), 34);
  // (The heir beats every second, and the root's loop runs as often.)
  for (double now = 35; now <= 34 + 1 + 20 + kRelinkS - 0.1 + 1e-9; now += 1) {
    const double at = std::min(now, 34 + 1 + 20 + kRelinkS - 0.1);
    t.root.OnChildFrame(1, Msg("beat").Encode(), at);
    t.root.OnTimer(at);
    ASSERT_TRUE(t.root.Keeps(2)) << at;
  }
  t.root.OnChildFrame(1, Msg("beat").Encode(), 34 + 1 + 20 + kRelinkS);
  t.root.OnTimer(34 + 1 + 20 + kRelinkS);
  EXPECT_FALSE(t.root.Keeps(2)) << "frozen: lost";
  ASSERT_EQ(t.root_io.Of(1, "gone").size(), 1u);
  EXPECT_NE(t.root_io.Of(1, "gone")[0].Str("what").find(
                "silent for 33.0 s, and not below the heir either"),
            std::string::npos)
      << t.root_io.Of(1, "gone")[0].Str("what");
}

TEST(TreeLinks, ASilentChildHeardAgainIsNoLongerAwaitedAndASilentHeirNotForEver) {
  HeirToo t;
  t.root.OnChildFrame(2, BeatSaying(5), 34);
  t.root.OnChildFrame(1, BeatSaying(5), 39);
  t.root.OnTimer(39.5);
  ASSERT_TRUE(t.root.Keeps(2));
  t.root.OnChildFrame(2, BeatSaying(5), 41);  // descheduled, not gone
  for (double now = 42; now < 70; now += 1) {
    t.root.OnChildFrame(2, BeatSaying(5), now);
    t.root.OnTimer(now + 0.5);
  }
  EXPECT_TRUE(t.root.Keeps(2));
  EXPECT_TRUE(t.root_io.Of(1, "gone").empty());
  // The heir, silent since 39, awaited below the root's successor (shim 2)
  // as long as any child below the heir, never came: lost.
  EXPECT_FALSE(t.root.Keeps(1));
}

// The heir's own link to the root cut while the root lives (issue 49):
// the heir asks the root's successor (shim 2) how long ago it heard the
// root, and links below it (the carrier answers as plane_join.cc's would).
struct AskIo : FakeIo {
  double ago = 0.4;
  std::vector<int> asked, linked;
  double RootHeardAgo(int shim, const std::string&, double) override {
    asked.push_back(shim);
    return ago;
  }
  bool Relink(int to, const std::string&, double) override {
    linked.push_back(to);
    return true;
  }
};

struct HeirCut : HeirUnderTheRoot<AskIo> {
  // The root and shim 2 hear each other until `until` (the heir's link is cut
  // from 34 on: nothing of it reaches the root, nor the root's it).
  void RootAndSuccessorTalk(double from, double until) {
    for (double now = from; now <= until; now += 1) {
      root.OnChildFrame(2, BeatSaying(5), now);
      child.OnParentFrame(Msg("beat").Encode(), now);
    }
  }
};

TEST(TreeLinks, TheRootsNamingOfItsHeirSaysItsSuccessor) {
  HeirCut t;
  ASSERT_EQ(t.root_io.Of(1, "heir").size(), 1u);
  EXPECT_EQ(t.root_io.Of(1, "heir")[0].Int("next"), 2);
  EXPECT_EQ(t.root_io.Of(1, "heir")[0].Str("naddr"), "10.0.0.2:1026");
  EXPECT_EQ(t.heir.successor(), 2);
  EXPECT_EQ(t.child.RootHeardAgo(1.5), 0.5) << "what shim 2 answers the heir's ask";
}

TEST(TreeLinks, AHeirWhoseOwnLinkToTheRootIsCutMovesBelowTheSuccessorAndStaysInTheJob) {
  // Before: the heir held an election no other shim joined (they all heard
  // the root), ended its part with 125, and the root counted its node lost.
  HeirCut t;
  t.root.OnChildFrame(1, BeatSaying(5), 34);  // the heir's last frame through the cut
  t.RootAndSuccessorTalk(2, 40);
  t.heir.OnTimer(40);  // silent since 1 (its allowance: 5 s)
  EXPECT_EQ(t.heir_io.asked, std::vector<int>{2});
  EXPECT_EQ(t.heir_io.linked, std::vector<int>{2});
  EXPECT_EQ(t.heir.parent(), 2);
  EXPECT_EQ(t.heir.machine().state(), JobState::kRunning) << "its ranks run on";
  EXPECT_TRUE(t.heir_io.Of(0, "left").empty()) << "the root must not step down";
  ASSERT_EQ(t.heir_io.Of(2, "orphan").size(), 1u);
  EXPECT_EQ(t.heir_io.Of(2, "orphan")[0].Int("heir"), 1);
  ASSERT_EQ(t.heir_io.Of(2, "record").size(), 1u) << "its place goes with its record";
  // Shim 2 takes it in: it is the heir now, and tells the root.
  t.child.AddChild(1, "h1", "10.0.0.1:1025", 40);
  for (const std::string& f : t.heir_io.sent[2]) t.child.OnChildFrame(1, f, 40.01);
  EXPECT_EQ(t.child.heir(), 2);
  ASSERT_EQ(t.io.Of(0, "moved").size(), 1u);
  EXPECT_EQ(t.io.Of(0, "moved")[0].Int("shim"), 1);
  // The root awaited its silent heir (before: lost at its allowance).
  t.root.OnTimer(39.9);
  EXPECT_TRUE(t.root.Keeps(1)) << "awaited below the successor";
  t.root.OnChildFrame(2, t.io.RawOf(0, "moved")[0], 40.05);
  EXPECT_FALSE(t.root.Keeps(1)) << "shim 2's child now";
  EXPECT_EQ(t.root.machine().heir(), 2) << "the root names its successor the heir";
  ASSERT_FALSE(t.root_io.Of(2, "heir").empty());
  EXPECT_EQ(t.root_io.Of(2, "heir").back().Int("shim"), 2);
  EXPECT_EQ(t.root_io.Of(2, "record").size(), 1u);
  t.RootAndSuccessorTalk(41, 70);
  t.root.OnTimer(70);
  EXPECT_EQ(t.root.machine().state(), JobState::kRunning) << "nothing of the job was lost";
  EXPECT_TRUE(t.root_io.Of(2, "gone").empty());
  EXPECT_TRUE(t.root_io.Of(2, "drop").empty());
  // The root's words reach the old heir through shim 2.
  t.child.OnParentFrame(Msg("halt").Encode(), 70.5);
  EXPECT_EQ(t.io.Of(1, "halt").size(), 1u);
  // Should the root then be lost, shim 2 holds the election (with the
  // root's record), the old heir in it.
  for (const char* type : {"heir", "record"})
    for (const std::string& f : t.root_io.RawOf(2, type)) t.child.OnParentFrame(f, 70.6);
  for (double now = 71; now < 80; now += 1) t.child.OnChildFrame(1, BeatSaying(5), now);
  t.child.OnTimer(80);
  EXPECT_EQ(t.child.machine().state(), JobState::kElecting);
  ASSERT_FALSE(t.io.Of(1, "end").empty());
  EXPECT_EQ(t.io.Of(1, "end").back().Int("again"), 1);
}

TEST(TreeLinks, ASuccessorThatHeardTheHeirsMoveHoldsTheElectionIfTheRootFreezesFirst) {
  // The root froze before it heard of the move (it never renamed its heir):
  // shim 2 holds the place and the record the heir handed it, and does not
  // link to its own child.
  HeirCut t;
  t.RootAndSuccessorTalk(2, 40);
  t.heir.OnTimer(40);
  t.child.AddChild(1, "h1", "10.0.0.1:1025", 40);
  for (const std::string& f : t.heir_io.sent[2]) t.child.OnChildFrame(1, f, 40.01);
  t.child.OnTimer(50);  // the root silent since 40
  EXPECT_EQ(t.child.machine().state(), JobState::kElecting);
  EXPECT_EQ(t.child.parent(), -1);
  EXPECT_TRUE(t.io.Of(1, "orphan").empty()) << "not linked below its own child";
}

TEST(TreeLinks, AHeirWhoseSuccessorHearsNoRootEitherHoldsTheElection) {
  // A frozen root: its silence is as old at the successor.
  HeirCut t;
  t.heir_io.ago = 6;
  t.heir.OnTimer(40);
  EXPECT_EQ(t.heir_io.asked, std::vector<int>{2});
  EXPECT_TRUE(t.heir_io.linked.empty());
  EXPECT_EQ(t.heir.machine().state(), JobState::kElecting);
  EXPECT_EQ(t.heir_io.Of(0, "left").size(), 1u);
  // No answer at all: the same.
  HeirCut u;
  u.heir_io.ago = -1;
  u.heir.OnTimer(40);
  EXPECT_EQ(u.heir.machine().state(), JobState::kElecting);
  // A root whose link closed is gone: no one is asked.
  HeirCut v;
  v.heir.OnParentClosed("closed", 40);
  EXPECT_TRUE(v.heir_io.asked.empty());
  EXPECT_EQ(v.heir.machine().state(), JobState::kElecting);
  // Nor when another child of the root found it lost and linked here first:
  // the root is lost for it too (and the successor may be that child,
  // blocked linking here while this shim waits for its answer).
  HeirCut w;
  w.heir.AddChild(2, "h2", "10.0.0.2:1026", 39);
  w.heir.OnChildFrame(2, Msg("orphan").Set("shim", 2).Set("silent", 1).Encode(), 39.01);
  w.heir.OnTimer(40);
  EXPECT_TRUE(w.heir_io.asked.empty());
  EXPECT_EQ(w.heir.machine().state(), JobState::kElecting);
}

// A root over shims 1-3 (shim 1 its heir, 2 the successor), started.
void OverThree(TreeLinks* root) {
  for (int c : {1, 2, 3})
    root->AddChild(c, "h" + std::to_string(c), "10.0.0." + std::to_string(c) + ":" +
                                                   std::to_string(1024 + c), 0);
  root->Start(0);
}

TEST(TreeLinks, ARootCutOffFromEveryChildSaysNoMajorityNotNoSpareLeft) {
  // 4 shims, NODE_RANKs 0-2 and a spare (3), every link of the root cut at
  // 34. Its heir is awaited below the successor, shim 2; shim 2 and the
  // spare are found lost first. Before the heir's cut was settled so, the
  // root said "no spare left" at once and wrote the job's record while its
  // heir took the job (test_netns_root).
  FakeIo io;
  TreeLinks root(TestConfig(0, 4, 3, 1), &io, 1, 30);
  OverThree(&root);
  for (double now = 31; now <= 34; now += 1)
    for (int c : {1, 2, 3}) root.OnChildFrame(c, BeatSaying(5), now);
  for (double now = 39.5; now < 80; now += 0.5) root.OnTimer(now);
  auto order = LastOf<StopOrder>(&root.machine());
  ASSERT_TRUE(order);
  EXPECT_EQ(order->exit_code, 125);
  EXPECT_EQ(order->message.find("no spare left"), std::string::npos) << order->message;
  EXPECT_NE(order->message.find("no majority"), std::string::npos) << order->message;
  EXPECT_TRUE(order->failure_json.empty()) << "the heir's side holds the job's record";
}

TEST(TreeLinks, ARootWhoseSuccessorIsLostNamesAnother) {
  FakeIo io;
  TreeLinks root(TestConfig(0, 5, 3, 1), &io, 1, 30);
  OverThree(&root);
  ASSERT_EQ(io.Of(1, "heir").size(), 1u);
  EXPECT_EQ(io.Of(1, "heir")[0].Int("next"), 2);
  root.OnChildClosed(2, "closed", 10);
  ASSERT_EQ(io.Of(1, "heir").size(), 2u);
  EXPECT_EQ(io.Of(1, "heir")[1].Int("shim"), 1);
  EXPECT_EQ(io.Of(1, "heir")[1].Int("next"), 3);
  EXPECT_EQ(io.Of(1, "heir")[1].Str("naddr"), "10.0.0.3:1027");
}

TEST(TreeLinks, AChildTheRootFoundLostBeforeItsMoveWasSaidIsStoppedWhereItIs) {
  HeirToo t;
  // The root found shim 2 silent, awaited it under the heir, and counted it
  // lost; its move's word comes later (its allowance was misread).
  t.root.OnChildFrame(2, BeatSaying(5), 34);
  t.root.OnChildFrame(1, Msg("beat").Encode(), 52);  // (the heir beats on)
  t.root.OnTimer(52);
  ASSERT_FALSE(t.root.Keeps(2));
  t.OrphanLinksToTheHeir(53);
  t.root.OnChildFrame(1, t.heir_io.RawOf(0, "moved")[0], 53.05);
  ASSERT_EQ(t.root_io.Of(1, "drop").size(), 1u);
  t.heir.OnParentFrame(t.root_io.RawOf(1, "drop")[0], 53.1);
  ASSERT_EQ(t.heir_io.Of(2, "stop").size(), 1u);
  EXPECT_EQ(t.heir_io.Of(2, "stop")[0].Int("code"), 125);
}

TEST(TreeLinks, ARootWhoseHeirLeftStepsDownAndItsOtherChildrenLinkToTheHeir) {
  // The root was frozen past its heir's allowance (SIGSTOP, a descheduled
  // process): when it wakes it reads the heir's "left" (before: it went on
  // as the root and wrote a verdict for a job its heir had taken).
  HeirToo t;
  t.heir.OnTimer(40);  // the heir finds the root silent: its election
  ASSERT_EQ(t.heir.machine().state(), JobState::kElecting);
  ASSERT_EQ(t.heir_io.Of(0, "left").size(), 1u);
  t.root.OnChildFrame(1, t.heir_io.RawOf(0, "left")[0], 70);
  EXPECT_EQ(t.root.machine().state(), JobState::kStopped);
  EXPECT_FALSE(t.root.machine().root());
  auto order = LastOf<StopOrder>(&t.root.machine());
  ASSERT_TRUE(order);
  EXPECT_EQ(order->exit_code, 125);
  EXPECT_TRUE(order->no_record);
  EXPECT_EQ(order->message.rfind("aml-shim: no majority: rank 1's shim, this shim's heir, "
                                 "found it silent and holds the job's election",
                                 0),
            0u)
      << order->message;
  // Shim 2, still linked to the root, links to the heir as if its link closed.
  ASSERT_EQ(t.root_io.Of(2, "yield").size(), 1u);
  EXPECT_TRUE(t.root_io.Of(2, "stop").empty());
  t.child.OnParentFrame(t.root_io.RawOf(2, "yield")[0], 70.01);
  EXPECT_EQ(t.child.parent(), 1);
  ASSERT_EQ(t.io.Of(1, "orphan").size(), 1u);
  EXPECT_EQ(t.io.Of(1, "orphan")[0].Int("silent"), 0);
}

TEST(TreeLinks, ARootStoppedBetweenItsReadAndItsTimersJudgesNoLinkSilentByItsOwnPause) {
  // Frozen after its loop read its links and before OnTimer ran (a CI run:
  // woken, it found its heir "silent for 60.4 s" before reading the heir's
  // "left"): the round judges no one; the next reads what came.
  HeirToo t;
  t.root.OnPolled(10);
  t.root.OnTimer(70);
  EXPECT_EQ(t.root.machine().state(), JobState::kRunning);
  EXPECT_TRUE(t.root.Keeps(1));
  EXPECT_TRUE(t.root.Keeps(2));
  t.heir.OnTimer(40);  // the heir had found the root silent meanwhile
  t.root.OnPolled(70.01);
  t.root.OnChildFrame(1, t.heir_io.RawOf(0, "left")[0], 70.01);
  EXPECT_EQ(t.root.machine().state(), JobState::kStopped);
  EXPECT_FALSE(t.root.machine().root()) << "it stepped down, not lost its children";
  // A link silent while the loop reads on is lost as ever.
  HeirToo u;
  u.root.OnPolled(70);
  u.root.OnTimer(70);
  EXPECT_FALSE(u.root.Keeps(2));
}

// The root's loop ran every second until 40 s, then nothing for 20 s
// (SIGSTOP, SIGCONT): a failure from below and its heir's "left" waited in
// its links. Before, it read the failure first and said "halt" to a job
// its heir held (aml-plane-sim, nemesis seed 409); now it hears its links
// anew before it acts (wake_gate.h), and the heir's word makes it step down.
Msg FailOf(int shim) {
  return Msg("fail").SetNumber("time", 45).Set("rank", shim).Set("node", shim).Set("code", 1)
      .Set("shim", shim).Set("host", "h" + std::to_string(shim));
}

void SteadyUntil(TreeLinks* root, double until) {
  for (double now = 1; now <= until; now += 1) {
    root->OnChildFrame(1, Msg("beat").Encode(), now);
    root->OnChildFrame(2, Msg("beat").Encode(), now);
    root->OnTimer(now);
  }
}

TEST(TreeLinks, ARootWokenFromAPauseActsOnNothingThatWaitedBeforeItHearsItsLinks) {
  HeirToo t;
  SteadyUntil(&t.root, 40);
  t.root.OnChildFrame(2, FailOf(2).Encode(), 60);
  EXPECT_TRUE(t.root_io.Of(1, "halt").empty()) << "no word to the job yet";
  t.root.OnChildFrame(1, Msg("left").Set("silent", 1).Encode(), 60);
  t.root.OnTimer(60);
  EXPECT_TRUE(t.root_io.Of(1, "halt").empty());
  EXPECT_EQ(t.root.machine().state(), JobState::kStopped);
  EXPECT_FALSE(t.root.machine().root());
  EXPECT_FALSE(t.root.machine().Stamp().holder);
}

// Woken, it hears its children anew (a beat each after its backlog): it
// holds the job, and the failure that waited is the job's as before.
TEST(TreeLinks, ARootWokenThatHearsAMajorityAnewActsOnWhatWaited) {
  HeirToo t;
  SteadyUntil(&t.root, 40);
  t.root.OnChildFrame(2, FailOf(2).Encode(), 60);
  t.root.OnTimer(60);
  EXPECT_TRUE(t.root_io.Of(1, "halt").empty());
  // (Beats sent after it woke: FakeIo's clock, 1000; an old one sent
  // before, as a link that heals delivers it, is no news.)
  t.root.OnChildFrame(1, Msg("beat").SetNumber("ts", 990).Encode(), 61);
  t.root.OnChildFrame(2, Msg("beat").SetNumber("ts", 990).Encode(), 61);
  t.root.OnTimer(61);
  EXPECT_TRUE(t.root_io.Of(1, "halt").empty());
  t.root.OnChildFrame(1, Msg("beat").SetNumber("ts", 1000).Encode(), 61.5);
  t.root.OnChildFrame(2, Msg("beat").SetNumber("ts", 1000).Encode(), 61.5);
  t.root.OnTimer(61.5);
  EXPECT_EQ(t.root_io.Of(1, "halt").size(), 1u) << "the failure, now the job's";
  EXPECT_TRUE(t.root.machine().root());
}

// Woken and cut off (nothing comes within kConfirmS): it holds the job no
// more, steps down and writes no record; what waited is dropped.
TEST(TreeLinks, ARootWokenThatHearsNoOneStepsDown) {
  HeirToo t;
  SteadyUntil(&t.root, 40);
  t.root.OnChildFrame(2, FailOf(2).Encode(), 60);
  t.root.OnTimer(60 + WakeGate::kConfirmS - 0.1);
  EXPECT_NE(t.root.machine().state(), JobState::kStopped);
  t.root.OnTimer(60 + WakeGate::kConfirmS);
  EXPECT_TRUE(t.root_io.Of(1, "halt").empty());
  ASSERT_EQ(t.root.machine().state(), JobState::kStopped);
  EXPECT_FALSE(t.root.machine().Stamp().holder);
  // A pause shorter than WakeGate::kGapS is no pause (a busy node).
  HeirToo busy;
  SteadyUntil(&busy.root, 40);
  busy.root.OnChildFrame(2, FailOf(2).Encode(), 42.5);
  EXPECT_EQ(busy.root_io.Of(1, "halt").size(), 1u);
}

}  // namespace
}  // namespace aml
