#include "launch/flight/culprit.h"

#include <gtest/gtest.h>

#include <string>

namespace aml {
namespace {

FrOp Op(int64_t seq, const std::string& op = "all_reduce", const std::string& sizes = "[[4]]",
        const std::string& frame = "<module> (train.py:9)") {
  FrOp o;
  o.seq = seq;
  o.op = op;
  o.sizes = sizes;
  o.dtype = "Float";
  o.state = "scheduled";
  o.frame = frame;
  return o;
}

// Rank `rank` on node rank/ranks_per_node, last in collective `entered`
// of `pg`, completed `completed`.
RankFlight Rank(int rank, int64_t entered, int64_t completed, const std::string& pg = "0",
                const std::string& members = "0-7", const FrOp* op = nullptr) {
  RankFlight r;
  r.rank = rank;
  r.node = rank / 2;
  r.host = "h" + std::to_string(rank / 2);
  FrSummary s;
  s.rank = rank;
  FrGroup g;
  g.pg = pg;
  g.desc = pg == "0" ? "default_pg" : "";
  g.ranks = members;
  g.enqueued = entered;
  g.completed = completed;
  g.last = op ? *op : Op(entered);
  s.groups.push_back(g);
  r.fr = s;
  return r;
}

TEST(Culprit, TheRankThatNeverEnteredIsNamedWithItsNode) {
  std::vector<RankFlight> ranks;
  for (int r = 0; r < 8; ++r)
    ranks.push_back(r == 5 ? Rank(r, 5120, 5120, "0", "0-7", nullptr) : Rank(r, 5121, 5120));
  ranks[5].fr->groups[0].last.frame = "<module> (train.py:7)";
  const Culprit c = FindCulprit(ranks, 8);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.pg, "0");
  EXPECT_EQ(c.op.seq, 5121);
  EXPECT_EQ(c.op.op, "all_reduce");
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_EQ(c.missing[0].rank, 5);
  EXPECT_EQ(c.node, 2);
  EXPECT_EQ(c.host, "h2");
  EXPECT_EQ(CulpritLine(c),
            "aml-shim: culprit: rank 5 [node 2, host h2] never entered all_reduce #5121 [[4]] "
            "Float of group 0 (default_pg), which ranks 0-4,6-7 entered and wait in; its last: "
            "all_reduce #5120 [[4]] Float at <module> (train.py:7)\n");
  const std::string json = CulpritJson(c);
  EXPECT_NE(json.find("\"missing\":[{\"rank\":5,\"node\":2,\"host\":\"h2\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"waiting\":\"0-4,6-7\""), std::string::npos) << json;
}

TEST(Culprit, MissingRanksOnSeveralNodesBlameNoNode) {
  std::vector<RankFlight> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back(Rank(r, r == 1 || r == 6 ? 9 : 10, 9));
  const Culprit c = FindCulprit(ranks, 8);
  ASSERT_TRUE(c.found);
  ASSERT_EQ(c.missing.size(), 2u);
  EXPECT_EQ(c.node, -1);
  EXPECT_NE(CulpritLine(c).find("ranks 1,6 [nodes 0, 3, hosts h0, h3]"), std::string::npos)
      << CulpritLine(c);
}

TEST(Culprit, AVictimWaitingInAnotherGroupIsNotTheCulprit) {
  // Rank 5 skipped #3 of group 1 (ranks 4-7); 4, 6 and 7 wait in it, so they
  // never entered #11 of the default group that everyone else waits in.
  std::vector<RankFlight> ranks;
  for (int r = 0; r < 8; ++r) {
    const bool sub = r >= 4;
    RankFlight f = Rank(r, sub && r != 5 ? 10 : 11, 10);
    if (sub) {
      FrGroup g;
      g.pg = "1";
      g.ranks = "4-7";
      g.enqueued = r == 5 ? 2 : 3;
      g.completed = 2;
      g.last = Op(g.enqueued);
      f.fr->groups.push_back(g);
    }
    ranks.push_back(f);
  }
  const Culprit c = FindCulprit(ranks, 8);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.pg, "1");
  EXPECT_EQ(c.op.seq, 3);
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_EQ(c.missing[0].rank, 5);
}

TEST(Culprit, MismatchedCollectivesNameTheFewer) {
  std::vector<RankFlight> ranks;
  const FrOp b = Op(7, "broadcast");
  for (int r = 0; r < 4; ++r) ranks.push_back(r == 3 ? Rank(r, 7, 6, "0", "0-3", &b) : Rank(r, 7, 6, "0", "0-3"));
  const Culprit c = FindCulprit(ranks, 4);
  ASSERT_TRUE(c.found);
  ASSERT_EQ(c.mismatches.size(), 1u);
  EXPECT_EQ(c.mismatches[0].variants[0].first, "all_reduce [[4]] Float");
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_EQ(c.missing[0].rank, 3);
  EXPECT_EQ(CulpritLine(c),
            "aml-shim: culprit: rank 3 [node 1, host h1] entered broadcast #7 [[4]] Float of "
            "group 0 (default_pg) where ranks 0-2 entered all_reduce #7 [[4]] Float\n");
}

TEST(Culprit, RanksWithNoRecordAreTheSuspectsWhenTheRestWait) {
  std::vector<RankFlight> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(Rank(r, 4, 3, "0", "0-3"));
  ranks[2].fr.reset();
  ranks[2].why_none = "no dump within --dump-timeout 10 s";
  const Culprit c = FindCulprit(ranks, 4);
  ASSERT_TRUE(c.found);
  ASSERT_EQ(c.missing.size(), 1u);
  EXPECT_EQ(c.missing[0].rank, 2);
  EXPECT_EQ(c.node, 1);
  EXPECT_NE(CulpritLine(c).find("; no flight record from rank 2: no dump within --dump-timeout 10 s"),
            std::string::npos)
      << CulpritLine(c);
}

TEST(Culprit, EveryRankInTheSameCollectiveBlamesNone) {
  std::vector<RankFlight> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(Rank(r, 4, 3, "0", "0-3"));
  const Culprit c = FindCulprit(ranks, 4);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(c.node, -1);
  EXPECT_EQ(CulpritLine(c),
            "aml-shim: no culprit: every rank entered all_reduce #4 [[4]] Float of group 0 "
            "(default_pg) and none completed it (the fault is between ranks, not one rank's)\n");
}

TEST(Culprit, NoRecordAtAllSaysWhy) {
  std::vector<RankFlight> ranks(2);
  ranks[0].rank = 0;
  ranks[0].why_none = "torch 1.13.1 has no flight recorder";
  ranks[1].rank = 1;
  ranks[1].why_none = "torch 1.13.1 has no flight recorder";
  const Culprit c = FindCulprit(ranks, 2);
  EXPECT_FALSE(c.found);
  EXPECT_EQ(CulpritLine(c),
            "aml-shim: no culprit: no rank's flight record came; no flight record from ranks "
            "0-1: torch 1.13.1 has no flight recorder\n");
}

TEST(Culprit, RecordsWithoutTheirStackTracesStillNameItAndSaySo) {
  std::vector<RankFlight> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(Rank(r, r == 3 ? 3 : 4, 3, "0", "0-3"));
  const std::string late = "the dump with them did not come within --dump-timeout 5 s";
  for (int r : {0, 3}) {
    ranks[r].fr->no_stacks = late;
    ranks[r].fr->groups[0].last.frame = "";
  }
  ranks[1].fr.reset();
  ranks[1].why_none = "nothing reads its flight-recorder pipe";
  const Culprit c = FindCulprit(ranks, 4);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(CulpritLine(c),
            "aml-shim: culprit: rank 3 [node 1, host h1] never entered all_reduce #4 [[4]] Float "
            "of group 0 (default_pg), which ranks 0,2 entered and wait in; its last: all_reduce "
            "#3 [[4]] Float; no flight record from rank 1: nothing reads its flight-recorder "
            "pipe; no stack traces from ranks 0,3: " + late + "\n");
  const std::string json = CulpritJson(c);
  EXPECT_NE(json.find("\"no_stacks\":[{\"rank\":0,\"why\":\"" + late + "\"},{\"rank\":3,"),
            std::string::npos)
      << json;
}

TEST(Culprit, ASummaryCarriesWhyItLacksStackTraces) {
  FrSummary s;
  s.rank = 3;
  s.no_stacks = "the dump with them failed: " + std::string(500, 'x');
  s.no_stacks.resize(kMaxNoStacks);
  auto back = ParseFrSummary(FrSummaryJson(s));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->no_stacks, s.no_stacks);
  FrSummary whole;
  EXPECT_EQ(FrSummaryJson(whole).find("no_stacks"), std::string::npos) << "said only when lacking";
}

}  // namespace
}  // namespace aml
