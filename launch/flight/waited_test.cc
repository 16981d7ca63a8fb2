#include "launch/flight/waited.h"

#include <gtest/gtest.h>

#include <string>

#include "launch/flight/fixture_test_util.h"
#include "shim/base/json_read.h"

namespace aml {
namespace {

// Rank `rank`'s record: in the default group it entered `entered` and
// completed `completed` (an all_reduce of 4 floats).
RankFlight Record(int rank, int64_t entered, int64_t completed, const std::string& op = "all_reduce") {
  RankFlight r;
  r.rank = rank;
  FrSummary s;
  s.rank = rank;
  FrGroup g;
  g.pg = "0";
  g.desc = "default_pg";
  g.enqueued = entered;
  g.completed = completed;
  g.last.seq = entered;
  g.last.op = op;
  g.last.sizes = "[[4]]";
  g.last.dtype = "Float";
  g.last.frame = "<module> (train.py:9)";
  s.groups.push_back(g);
  r.fr = s;
  return r;
}

RankFlight NoRecord(int rank, const std::string& why) {
  RankFlight r;
  r.rank = rank;
  r.why_none = why;
  return r;
}

TEST(Waited, TheOthersWaitInOneCollective) {
  std::vector<RankFlight> records;
  for (int r = 0; r < 8; ++r)
    if (r != 5) records.push_back(Record(r, 5121, 5120));
  const Waited w = FindWaited(records, 5);
  ASSERT_EQ(w.in.size(), 1u);
  EXPECT_EQ(w.in[0].op.seq, 5121);
  EXPECT_EQ(WaitedLine(5, "exit status 1", w),
            "aml-shim: rank 5 failed (exit status 1) while ranks 0-4,6-7 waited in all_reduce "
            "#5121 [[4]] Float of group 0 (default_pg)\n");
}

TEST(Waited, SeveralCollectivesTheIdleAndTheRecordsThatDidNotCome) {
  std::vector<RankFlight> records = {Record(0, 12, 11), Record(1, 12, 11), Record(2, 3, 2, "broadcast"),
                                     Record(3, 12, 12), NoRecord(4, "it had ended"),
                                     NoRecord(6, "it had ended"), Record(7, -1, -1)};
  records[2].fr->groups[0].pg = "1";
  records[2].fr->groups[0].desc = "";
  const Waited w = FindWaited(records, 5);
  EXPECT_EQ(WaitedLine(5, "killed by signal 9 (SIGKILL)", w),
            "aml-shim: rank 5 failed (killed by signal 9 (SIGKILL)) while ranks 0-1,3 were last "
            "in all_reduce #12 [[4]] Float of group 0 (default_pg), rank 2 waited in broadcast "
            "#3 [[4]] Float of group 1; rank 7 had entered no collective; no flight record from "
            "ranks 4,6: it had ended\n");
  auto j = ParseJson(WaitedJson(5, "killed by signal 9 (SIGKILL)", w));
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ(j->Find("failed_rank")->text, "5");
  ASSERT_EQ(j->Find("in")->items.size(), 2u);
  EXPECT_EQ(j->Find("in")->items[0].Find("ranks")->text, "0-1,3");
  EXPECT_EQ(j->Find("in")->items[0].Find("completed_by")->text, "3");
  EXPECT_EQ(j->Find("idle")->text, "7");
  EXPECT_EQ(j->Find("no_record")->items[0].Find("ranks")->text, "4,6");
}

TEST(Waited, TheFailedRanksOwnRecordAndNoRecordAtAllSayNothing) {
  // Only the failed rank's record, or none came: nothing to add.
  EXPECT_EQ(WaitedLine(1, "exit status 1", FindWaited({Record(1, 4, 3)}, 1)), "");
  EXPECT_EQ(WaitedLine(1, "exit status 1", FindWaited({NoRecord(0, "no pipe")}, 1)), "");
  EXPECT_EQ(WaitedJson(1, "exit status 1", FindWaited({}, 1)), "");
}

TEST(Waited, ThePendingCollectiveIsTheFirstNotCompleted) {
  // Entered 7 and 8 (async), completed 6: it waits in 7.
  RankFlight r = Record(0, 8, 6);
  r.fr->groups[0].pending = r.fr->groups[0].last;
  r.fr->groups[0].pending.seq = 7;
  r.fr->groups[0].pending.op = "broadcast";
  const Waited w = FindWaited({r}, 1);
  ASSERT_EQ(w.in.size(), 1u);
  EXPECT_EQ(w.in[0].op.seq, 7);
  EXPECT_EQ(w.in[0].op.op, "broadcast");
}

TEST(Waited, FromARealGlooDump) {
  // Rank 0 of torch 2.14 waited in its sixth all_reduce (the fixture).
  auto s = SummarizeDump(FlightFixture("gloo-skip-rank0.pickle"), 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  RankFlight r;
  r.rank = 0;
  r.fr = *s;
  EXPECT_EQ(WaitedLine(1, "exit status 1", FindWaited({r}, 1)),
            "aml-shim: rank 1 failed (exit status 1) while rank 0 waited in all_reduce #6 [[4]] "
            "Float of group 0 (default_pg)\n");
}

}  // namespace
}  // namespace aml
