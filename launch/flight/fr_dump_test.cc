#include "launch/flight/fr_dump.h"

#include <gtest/gtest.h>

#include "launch/flight/fixture_test_util.h"

#include <fstream>
#include <sstream>
#include <string>

namespace aml {
namespace {

using namespace std::string_literals;

TEST(FrDump, SummarizesARealNcclDump) {
  // One H100, torch 2.11: 40 all-reduces of 1 Mi floats, all completed.
  auto s = SummarizeDump(FlightFixture("nccl-h100-rank0.pickle"), 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->version, "2.10");
  ASSERT_EQ(s->groups.size(), 1u);
  const FrGroup& g = s->groups[0];
  EXPECT_EQ(g.pg, "0");
  EXPECT_EQ(g.desc, "default_pg");
  EXPECT_EQ(g.ranks, "0");
  EXPECT_EQ(g.enqueued, 40);
  EXPECT_EQ(g.completed, 40);
  EXPECT_EQ(g.last.seq, 40);
  EXPECT_EQ(g.last.op, "all_reduce");
  EXPECT_EQ(g.last.sizes, "[[1048576]]");
  EXPECT_EQ(g.last.dtype, "Float");
  EXPECT_EQ(g.last.state, "completed");
  // The caller's frame, not torch's: the job's script.
  EXPECT_EQ(g.last.frame.find("all_reduce"), std::string::npos) << g.last.frame;
  EXPECT_NE(g.last.frame.find(".py:"), std::string::npos) << g.last.frame;
  EXPECT_EQ(g.pending.seq, -1) << "nothing is pending when all completed";
}

TEST(FrDump, TimesEachCompletedCollectiveAsTheRankEnteredIt) {
  // Gloo, torch 2.14: rank 0 completed five all-reduces and entered a sixth.
  std::vector<FrEntryTimes> times;
  auto s = SummarizeDump(FlightFixture("gloo-skip-rank0.pickle"), 0, &times);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].pg, "0");
  ASSERT_EQ(times[0].ops.size(), 5u) << "the sixth is not completed";
  EXPECT_EQ(times[0].ops.front(), std::make_pair(int64_t{1}, int64_t{1795724283387605443}));
  EXPECT_EQ(times[0].ops.back(), std::make_pair(int64_t{5}, int64_t{1795724283406276867}));
  // NCCL: 40 completed, the last kMaxTimedOps kept.
  times.clear();
  ASSERT_TRUE(SummarizeDump(FlightFixture("nccl-h100-rank0.pickle"), 0, &times).ok());
  ASSERT_EQ(times.size(), 1u);
  ASSERT_EQ(times[0].ops.size(), std::min<size_t>(40, kMaxTimedOps));
  EXPECT_EQ(times[0].ops.back().first, 40);
  for (size_t k = 1; k < times[0].ops.size(); ++k)
    EXPECT_LE(times[0].ops[k - 1].second, times[0].ops[k].second);
}

TEST(FrDump, SummarizesGlooAndItsBlankConfigKey) {
  // Rank 0 entered a sixth all-reduce that rank 1 never entered; Gloo's
  // pg_config keys the group '' (torch 2.14).
  auto s0 = SummarizeDump(FlightFixture("gloo-skip-rank0.pickle"), 0);
  auto s1 = SummarizeDump(FlightFixture("gloo-skip-rank1.pickle"), 1);
  ASSERT_TRUE(s0.ok()) << s0.error().message;
  ASSERT_TRUE(s1.ok()) << s1.error().message;
  ASSERT_EQ(s0->groups.size(), 1u);
  const FrGroup& g0 = s0->groups[0];
  EXPECT_EQ(g0.pg, "0");
  EXPECT_EQ(g0.desc, "default_pg");
  EXPECT_EQ(g0.ranks, "0-1") << "the '' config stands for the group";
  EXPECT_EQ(g0.enqueued, 6);
  EXPECT_EQ(g0.completed, 5);
  EXPECT_EQ(g0.last.seq, 6);
  EXPECT_EQ(g0.last.op, "all_reduce");
  EXPECT_EQ(g0.last.sizes, "[[4]]");
  EXPECT_EQ(g0.last.frame, "<module> (t.py:15)");
  EXPECT_EQ(s1->groups[0].enqueued, 5);
  EXPECT_EQ(s1->groups[0].last.frame, "<module> (t.py:7)");
}

TEST(FrDump, TheSummaryCrossesTheWireWhole) {
  auto s = SummarizeDump(FlightFixture("gloo-skip-rank0.pickle"), 0);
  ASSERT_TRUE(s.ok());
  const std::string json = FrSummaryJson(*s);
  EXPECT_LT(json.size(), 600u) << json;
  auto back = ParseFrSummary(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(FrSummaryJson(*back), json);
}

TEST(FrDump, ASummaryIsBoundedWhateverTheDump) {
  // 40 groups with long names and frames: 16 kept, the rest counted, each
  // string capped.
  std::string p = "\x80\x02}(X\x07\x00\x00\x00versionX\x03\x00\x00\x00" "2.1X\x09\x00\x00\x00pg_status}("s;
  for (int i = 0; i < 40; ++i) {
    const std::string name = std::to_string(i) + std::string(500, 'x');
    p += "X" + std::string(1, static_cast<char>(name.size() & 0xff)) +
         std::string(1, static_cast<char>(name.size() >> 8)) + std::string(2, '\0') + name + "}";
  }
  p += "uX\x07\x00\x00\x00" "entries]u."s;
  auto s = SummarizeDump(p, 3);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->groups.size(), kMaxGroups);
  EXPECT_EQ(s->more_groups, 40 - static_cast<int>(kMaxGroups));
  EXPECT_LT(FrSummaryJson(*s).size(), 16u * 1200) << "bounded by the caps, not the dump";
}

TEST(FrDump, AForeignOrBrokenDumpIsOneLine) {
  auto cut = SummarizeDump(FlightFixture("nccl-h100-rank0.pickle").substr(0, 3000), 0);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().message.find('\n'), std::string::npos);
  EXPECT_NE(cut.error().message.find("not a flight-recorder dump"), std::string::npos);
  auto list = SummarizeDump("\x80\x02]q\x00."s, 0);
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.error().message.find("no \"entries\""), std::string::npos);
  EXPECT_FALSE(ParseFrSummary("{\"groups\": [").ok());
  EXPECT_FALSE(ParseFrSummary(std::string(70000, ' ')).ok());
}

}  // namespace
}  // namespace aml
