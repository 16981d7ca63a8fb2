// The root's record as its heir reads it back (job_record.h, roster.h).
#include "shim/control/job_record.h"

#include <gtest/gtest.h>

#include "shim/control/roster.h"

namespace aml {
namespace {

TEST(JobRecord, AttemptsReadBackWithEveryField) {
  AttemptRecord a;
  a.number = 2;
  a.duration_s = 12.25;
  a.exit_code = 7;
  a.what = "rank 3 failed (exit status 7) \"quoted\"\n";
  a.rank = 3;
  a.failure_wall = 1700000000.5;
  a.outputs_known = true;
  a.first_output_wall = 1699999990.25;
  a.shims_ended_well = 4;
  a.node_replaced = true;
  a.nodes = {"gpu1", "gpu2"};
  a.warm_shims = 2;
  a.started_warm = 3;
  a.started_cold = 1;
  AttemptRecord hang;
  hang.number = 3;
  hang.hang = true;
  hang.exit_code = 124;
  auto j = ParseJson(SaveAttempts({a, hang}));
  ASSERT_TRUE(j.ok());
  std::vector<AttemptRecord> back;
  ASSERT_TRUE(LoadAttempts(*j, &back));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].number, 2);
  EXPECT_DOUBLE_EQ(back[0].duration_s, 12.25);
  EXPECT_EQ(back[0].exit_code, 7);
  EXPECT_EQ(back[0].what, a.what);
  EXPECT_EQ(back[0].rank, 3);
  EXPECT_DOUBLE_EQ(back[0].failure_wall, 1700000000.5);
  EXPECT_TRUE(back[0].outputs_known);
  EXPECT_DOUBLE_EQ(back[0].first_output_wall, 1699999990.25);
  EXPECT_EQ(back[0].shims_ended_well, 4);
  EXPECT_TRUE(back[0].node_replaced);
  EXPECT_EQ(back[0].nodes, a.nodes);
  EXPECT_EQ(back[0].warm_shims, 2);
  EXPECT_EQ(back[0].started_warm, 3);
  EXPECT_EQ(back[0].started_cold, 1);
  EXPECT_TRUE(back[1].hang);
  EXPECT_EQ(back[1].rank, -1);
  EXPECT_FALSE(LoadAttempts(*ParseJson("{}"), &back));
  EXPECT_FALSE(LoadAttempts(*ParseJson("[{\"x\":1}]"), &back));
  EXPECT_EQ(back.size(), 2u);  // untouched
}

TEST(JobRecord, TheRosterReadsBackWholeAndRefusesWhatDoesNotFit) {
  Roster r(6, 2);  // NODE_RANKs 0-3, spares 4 and 5
  r.Retire(1, "h1", "lost: cut", 1);
  r.NoteFirstFailure(2);
  ASSERT_TRUE(r.Fill());
  r.Retire(5, "h5", "lost: killed", 2);
  auto j = ParseJson(r.Save());
  ASSERT_TRUE(j.ok()) << r.Save();
  Roster back(6, 2);
  ASSERT_TRUE(back.Load(*j));
  EXPECT_EQ(back.Encode(), r.Encode());  // "0,4,2-3"
  EXPECT_EQ(back.Encode(), "0,4,2-3");
  EXPECT_TRUE(back.Spares().empty());
  EXPECT_TRUE(back.Retired(1));
  EXPECT_TRUE(back.Retired(5));
  EXPECT_EQ(back.NodeOf(4), 1);
  EXPECT_EQ(back.NodeOf(1), -1);
  EXPECT_EQ(back.Streak(2), 1);
  EXPECT_EQ(back.RetiredJson(), r.RetiredJson());
  Roster other(9, 2);  // another job's size
  EXPECT_FALSE(other.Load(*j));
  EXPECT_FALSE(back.Load(*ParseJson("{\"holders\":\"0-3\"}")));
}

}  // namespace
}  // namespace aml
