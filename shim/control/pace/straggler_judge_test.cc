#include "shim/control/pace/straggler_judge.h"

#include <gtest/gtest.h>

#include <random>

#include "shim/control/pace/pace_test_util.h"

namespace aml {
namespace {

constexpr int kAll = 1;  // (a look has every part: the tests' samples are whole)

// A Gloo-like job: each step every node computes `step_s` (the slow node
// `slow` times longer), then all enter the collective; the next step starts
// when the last entered. Jitter is drawn per rank and step.
struct Job {
  int shims = 4, per_node = 2, slow_shim = -1;
  double step_s = 0.1, slow = 1.0, jitter_s = 0.002;
  int burst_every = 1;  // the slow node is slow in one step of this many
  std::mt19937 rng{7};
  double now = 1.8e9;
  int64_t seq = 1;
  std::function<double(int)> offset = [](int) { return 0.0; };
  // A rank's own work in step `seq`, on top of its node's (none by default).
  std::function<double(int, int64_t)> extra = [](int, int64_t) { return 0.0; };
  double bound_s = 0.0005;

  PaceSample Look(int64_t look, int n) {
    std::map<std::pair<int, int64_t>, double> t;
    std::normal_distribution<double> noise(0, jitter_s);
    for (int k = 0; k < n; ++k) {
      double last = now;
      for (int r = 0; r < shims * per_node; ++r) {
        const bool slow_now = r / per_node == slow_shim && (seq + k) % burst_every == 0;
        const double compute = step_s * (slow_now ? slow : 1.0) + extra(r, seq + k);
        const double e = now + compute + std::abs(noise(rng));
        t[{r, seq + k}] = e;
        last = std::max(last, e);
      }
      now = last + 0.001;
    }
    PaceSample s = MakeLook(
        look, shims, per_node, seq, n,
        [&](int shim, int r, int64_t q) { return t[{r, q}] - offset(shim); }, offset, bound_s);
    seq += n;
    return s;
  }
};

TEST(StragglerJudge, NamesANodeThirtyPerCentSlowInThreeLooks) {
  Job job;
  job.slow_shim = 2;
  job.slow = 1.3;
  StragglerJudge judge(3);
  for (int look = 1; look <= 2; ++look) EXPECT_TRUE(judge.Look(job.Look(look, 40), kAll).empty());
  auto c = judge.Look(job.Look(3, 40), kAll);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].shim, 2);
  EXPECT_TRUE(c[0].named);
  const SlowNode& n = judge.nodes().at(2);
  EXPECT_EQ(n.streak, 3);
  EXPECT_GE(n.late_ops, 38);
  EXPECT_TRUE(n.rank == 4 || n.rank == 5) << n.rank;
  EXPECT_NEAR(n.mean_late_s, 0.03, 0.005);
  // 0.03 s of each 0.131 s step: about 13.7 s per minute.
  EXPECT_NEAR(n.wait_per_min_s, 60 * 0.03 / 0.131, 1.5);
  const std::string line = SlowLine(n, "gpu003");
  EXPECT_NE(line.find("gpu003 (shim 2) is slow"), std::string::npos) << line;
  EXPECT_NE(line.find("s per minute"), std::string::npos) << line;
  // The node is itself again: one look clears it.
  job.slow = 1.0;
  c = judge.Look(job.Look(4, 40), kAll);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].named);
}

TEST(StragglerJudge, NamesATenPerCentSlowNodeAndNoHealthyOne) {
  Job job;
  job.slow_shim = 0;
  job.slow = 1.1;
  job.shims = 8;
  job.step_s = 0.2;  // 20 ms late a step: over a busy core's few milliseconds
  StragglerJudge judge(3);
  std::vector<StragglerJudge::Change> all;
  for (int look = 1; look <= 3; ++look)
    for (auto c : judge.Look(job.Look(look, 60), kAll)) all.push_back(c);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].shim, 0);
}

TEST(StragglerJudge, AHealthyJobIsNeverNamedOverManyLooks) {
  for (int shims : {2, 3, 16}) {
    for (double jitter : {0.002, 0.01, 0.03}) {  // up to a third of the step
      Job job;
      job.shims = shims;
      job.jitter_s = jitter;
      StragglerJudge judge(3);
      for (int look = 1; look <= 300; ++look)
        ASSERT_TRUE(judge.Look(job.Look(look, 60), kAll).empty())
            << shims << " shims, jitter " << jitter << ", look " << look;
    }
  }
}

TEST(StragglerJudge, ABusyCoresFewMillisecondsAreNotANodesSlowness) {
  // Steps of 33 ms; one node's rank, woken on a core that busy loops hold,
  // enters 6 ms after the others in half the steps, for minutes (seen on 3
  // netns nodes sharing 2 busy cores: the scheduler, not the node). Its
  // share of the waiting is all of it, the job waits 5 s per minute for it,
  // and yet it is under kMinLateS: never named.
  Job job;
  job.shims = 3;
  job.step_s = 0.033;
  job.jitter_s = 0.0005;
  job.extra = [](int r, int64_t seq) { return r == 2 && seq % 2 ? 0.006 : 0.0; };
  StragglerJudge judge(3);
  for (int look = 1; look <= 30; ++look)
    ASSERT_TRUE(judge.Look(job.Look(look, 64), kAll).empty()) << "look " << look;
  // The same node late by 20 ms (a slow node's lateness) is named.
  job.extra = [](int r, int64_t seq) { return r == 2 && seq % 2 ? 0.02 : 0.0; };
  std::vector<StragglerJudge::Change> all;
  for (int look = 31; look <= 33; ++look)
    for (auto c : judge.Look(job.Look(look, 64), kAll)) all.push_back(c);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].shim, 1);
}

TEST(StragglerJudge, ARankOnTheBusierCoreNowAndThenIsNotANodesSlowness) {
  // Seen on 3 netns nodes of 2 ranks sharing 2 cores with 4 busy loops
  // (kernel 6.18): steps of about 60 ms, and one rank, kept by the
  // scheduler on the busier core, entered 12-20 ms after the others in a
  // third of the steps, look after look (its node held 92 % of the
  // waiting, the job waited for it 5 s per minute); another node's rank was
  // as late now and then. Only what lies beyond the floor counts for a node
  // late in fewer than half the collectives: not named.
  Job job;
  job.shims = 3;
  job.step_s = 0.05;
  job.jitter_s = 0.0005;
  job.extra = [](int r, int64_t seq) {
    double late = 0.0;
    if (r == 3 && seq % 3 == 0) late = seq % 2 ? 0.012 : 0.020;
    if (r == 0 && seq % 16 == 1) late = 0.014;
    return late;
  };
  StragglerJudge judge(3);
  for (int look = 1; look <= 30; ++look) {
    ASSERT_TRUE(judge.Look(job.Look(look, 64), kAll).empty()) << "look " << look;
    if (look > 1) {
      ASSERT_GT(judge.nodes().at(1).share, StragglerJudge::kWaitShare);
    }
  }
  // The same rank late by that much in most steps is its node's slowness.
  job.extra = [](int r, int64_t seq) { return r == 3 && seq % 3 ? 0.016 : 0.0; };
  std::vector<StragglerJudge::Change> all;
  for (int look = 31; look <= 33; ++look)
    for (auto c : judge.Look(job.Look(look, 64), kAll)) all.push_back(c);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].shim, 1);
}

TEST(StragglerJudge, ANodeSlowInBurstsIsNamedToo) {
  // Twice as slow in one step of four: late in a quarter of the
  // collectives only, but most of what the job waits for.
  Job job;
  job.slow_shim = 3;
  job.slow = 2.0;
  job.burst_every = 4;
  StragglerJudge judge(3);
  std::vector<StragglerJudge::Change> all;
  for (int look = 1; look <= 3; ++look)
    for (auto c : judge.Look(job.Look(look, 60), kAll)) all.push_back(c);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].shim, 3);
  const SlowNode& n = judge.nodes().at(3);
  EXPECT_LT(n.late_ops, n.ops / 2);
  EXPECT_GT(n.share, StragglerJudge::kWaitShare);
}

TEST(StragglerJudge, ALookMissingANodesPartJudgesNothing) {
  Job job;
  job.slow_shim = 1;
  job.slow = 2.0;
  StragglerJudge judge(3);
  // The first look lacks shims 2 and 3's parts: the group's nodes are not
  // known yet, and two nodes' collectives are not the group's.
  job.shims = 2;
  EXPECT_TRUE(judge.Look(job.Look(1, 30), 4).empty());
  EXPECT_EQ(judge.judged(), 0);
  job.shims = 4;
  EXPECT_TRUE(judge.Look(job.Look(2, 30), 4).empty());
  EXPECT_EQ(judge.judged(), 30);
  // Shims 1-3's parts did not come: the others' collectives are not complete.
  job.shims = 1;  // (the part of shim 0 alone)
  EXPECT_TRUE(judge.Look(job.Look(3, 30), 4).empty());
  EXPECT_EQ(judge.judged(), 30);
}

TEST(StragglerJudge, ClocksSkewedWithinTheirBoundNeverNameAHealthyNode) {
  // Shim 1's offset is wrong by its whole bound (+20 ms, a tenth of the
  // step and more than kLateFrac of it): its ranks look late by that much
  // in every collective, and still no one is named.
  Job job;
  job.step_s = 0.2;
  job.jitter_s = 0.0005;
  job.bound_s = 0.01;
  job.offset = [](int shim) { return shim == 1 ? 5.0 : -3.0; };
  StragglerJudge judge(3);
  // The true offsets are as said, but shim 1's estimate is 20 ms off.
  Job skewed = job;
  for (int look = 1; look <= 20; ++look) {
    PaceSample s = skewed.Look(look, 30);
    for (PaceGroup& g : s.groups)
      for (PaceOp& op : g.ops)
        for (PaceEntrant* e : {&op.last, &op.next})
          if (e->shim == 1) e->t_us += 20000;
    // (the merge's order is redone: late first)
    for (PaceGroup& g : s.groups)
      for (PaceOp& op : g.ops)
        if (op.next.t_us > op.last.t_us) std::swap(op.last, op.next);
    ASSERT_TRUE(judge.Look(s, kAll).empty()) << look;
  }
}

TEST(StragglerJudge, ALookWithTooFewCollectivesLeavesTheStreakAsItWas) {
  Job job;
  job.slow_shim = 1;
  job.slow = 2.0;
  StragglerJudge judge(3);
  EXPECT_TRUE(judge.Look(job.Look(1, 30), kAll).empty());
  EXPECT_TRUE(judge.Look(job.Look(2, 3), kAll).empty());  // the job paused: 3 collectives
  EXPECT_EQ(judge.nodes().at(1).streak, 1);
  EXPECT_TRUE(judge.Look(job.Look(3, 30), kAll).empty());
  EXPECT_EQ(judge.Look(job.Look(4, 30), kAll).size(), 1u);
}

TEST(StragglerJudge, CollectivesAreJudgedOnceThoughLooksOverlap) {
  Job job;
  job.slow_shim = 1;
  job.slow = 2.0;
  StragglerJudge judge(2);
  PaceSample s = job.Look(1, 30);
  EXPECT_TRUE(judge.Look(s, kAll).empty());
  s.look = 2;
  EXPECT_TRUE(judge.Look(s, kAll).empty()) << "the same collectives again: nothing new judged";
  EXPECT_EQ(judge.judged(), 30);
  // A new attempt: its sequence numbers start over.
  judge.NewAttempt();
  job.seq = 1;
  EXPECT_TRUE(judge.Look(job.Look(3, 30), kAll).empty());
  EXPECT_EQ(judge.Look(job.Look(4, 30), kAll).size(), 1u);
}

// The report's run: a node 1.3x slow, and rank 0 stalling 0.8 s every 35
// steps (a checkpoint). Before, a look holding the stall gave rank 0's node
// most of the look's lateness: the slow node was said "no longer slow" and
// named again 3 looks later (its retirement delayed as often).
TEST(StragglerJudge, AnotherNodesOneStallDoesNotClearASlowNode) {
  Job job;
  job.slow_shim = 2;
  job.slow = 1.3;
  job.extra = [](int rank, int64_t seq) { return rank == 0 && seq % 35 == 0 ? 0.8 : 0.0; };
  StragglerJudge judge(3, 2);
  std::vector<StragglerJudge::Change> all;
  for (int look = 1; look <= 12; ++look)
    for (auto c : judge.Look(job.Look(look, 40), kAll)) all.push_back(c);
  ASSERT_EQ(all.size(), 1u) << (all.size() > 1 ? ClearedLine(all[1].node, "t7n3") : "");
  EXPECT_EQ(all[0].shim, 2);
  EXPECT_TRUE(all[0].named);
  EXPECT_EQ(all[0].node.streak, 3);
}

// Rank 0 doing 30 ms of its own work each step (metrics, an eval shard):
// its node's other rank is on time. It is said as rank 0's lateness, not
// its node's; a node whose ranks are all slower is still the node's.
TEST(StragglerJudge, ALatenessThatIsOneRanksIsSaidAsThatRanks) {
  Job job;
  job.extra = [](int rank, int64_t) { return rank == 0 ? 0.03 : 0.0; };
  StragglerJudge judge(3, 2);
  std::vector<StragglerJudge::Change> all;
  for (int look = 1; look <= 3; ++look)
    for (auto c : judge.Look(job.Look(look, 40), kAll)) all.push_back(c);
  ASSERT_EQ(all.size(), 1u);
  const SlowNode& n = all[0].node;
  EXPECT_EQ(n.shim, 0);
  EXPECT_EQ(n.rank, 0);
  EXPECT_TRUE(n.one_rank);
  EXPECT_GE(n.rank_share, 0.99);
  const std::string line = SlowLine(n, "t7n1");
  EXPECT_EQ(line.rfind("rank 0 on t7n1 (shim 0) is late: it entered ", 0), 0u) << line;
  EXPECT_NE(line.find("its own work (logging, an uneven split of the data) or its GPU, which "
                      "aml-shim cannot tell apart"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("is slow"), std::string::npos) << line;
  // Its work ends: "no longer late", as it was named.
  job.extra = [](int, int64_t) { return 0.0; };
  auto c = judge.Look(job.Look(4, 40), kAll);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(ClearedLine(c[0].node, "t7n1").rfind("rank 0 on t7n1 (shim 0) is no longer late: ", 0),
            0u);

  // Both ranks of node 1 slower: its last rank is either; the node is slow.
  Job slow;
  slow.slow_shim = 1;
  slow.slow = 1.3;
  StragglerJudge node_judge(3, 2);
  all.clear();
  for (int look = 1; look <= 3; ++look)
    for (auto ch : node_judge.Look(slow.Look(look, 40), kAll)) all.push_back(ch);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_FALSE(all[0].node.one_rank) << all[0].node.rank_share;
  EXPECT_EQ(SlowLine(all[0].node, "t7n2").rfind("t7n2 (shim 1) is slow: its ranks entered", 0), 0u);
  // One rank a node: its lateness is its node's.
  StragglerJudge single(3, 1);
  Job one;
  one.per_node = 1;
  one.extra = [](int rank, int64_t) { return rank == 0 ? 0.03 : 0.0; };
  all.clear();
  for (int look = 1; look <= 3; ++look)
    for (auto ch : single.Look(one.Look(look, 40), kAll)) all.push_back(ch);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_FALSE(all[0].node.one_rank);
}

}  // namespace
}  // namespace aml
