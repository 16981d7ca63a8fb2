#include "shim/control/attempts.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

// A failure of the attempt under way, `at` s after it began (at 1000).
AttemptRecord Failure(const Attempts& a, double at, int code) {
  AttemptRecord r = a.New(1000 + at);
  r.exit_code = code;
  r.rank = 3;
  r.what = "rank 3 exited with status " + std::to_string(code);
  return r;
}

TEST(Attempts, AnAttemptIsNumberedAndTimedFromItsStart) {
  Attempts a(3);
  a.Began(1000);
  a.SetNodes({"gpu001", "gpu002"});
  AttemptRecord r = a.New(1012.5);
  EXPECT_EQ(r.number, 1);
  EXPECT_DOUBLE_EQ(r.duration_s, 12.5);
  EXPECT_EQ(r.nodes, (std::vector<std::string>{"gpu001", "gpu002"}));
  // A failure stamped before the start (another node's clock) ran 0 s.
  EXPECT_DOUBLE_EQ(a.New(999).duration_s, 0);
}

TEST(Attempts, EachAttemptIsKeptOnce) {
  Attempts a(3);
  a.Began(1000);
  a.Keep(Failure(a, 5, 7));
  a.Keep(Failure(a, 6, 9));  // the same attempt: the first stays
  ASSERT_EQ(a.list().size(), 1u);
  EXPECT_EQ(a.list()[0].exit_code, 7);
}

// A round: each shim's word counted once, the first output among them
// known at its close, the restart's order built then, the count up.
TEST(Attempts, ARoundRestartsOnceEveryShimSaidItsRanksEnded) {
  Attempts a(2);
  a.Began(1000);
  ASSERT_TRUE(a.Open(Failure(a, 100, 7)).restart);
  EXPECT_TRUE(a.list().empty());  // kept at the round's close
  a.NewRound();
  Ending e;
  e.message = "aml-shim: rank 3 failed\n";
  e.print_own = true;
  a.Plan(std::move(e));
  EXPECT_TRUE(a.NoteEnded(0, 1050));
  EXPECT_FALSE(a.NoteEnded(0, 1001));  // said before: not taken again
  EXPECT_TRUE(a.NoteEnded(1, 0));      // no output at all
  EXPECT_TRUE(a.NoteEnded(2, 1020));
  EXPECT_EQ(a.ended(), (std::set<int>{0, 1, 2}));
  RestartVerdict v = a.Close(2000);
  ASSERT_TRUE(v.restart) << v.why_not;
  EXPECT_EQ(a.restarts(), 1);
  ASSERT_EQ(a.list().size(), 1u);
  EXPECT_TRUE(a.list()[0].outputs_known);
  EXPECT_DOUBLE_EQ(a.list()[0].first_output_wall, 1020);
  EXPECT_DOUBLE_EQ(a.backoff_s(), 0);  // a single failure restarts at once
  EXPECT_DOUBLE_EQ(a.backoff_until(), 2000);
  RestartOrder o = a.TakeRestart();
  EXPECT_EQ(o.restart, 1);
  EXPECT_EQ(o.line, "aml-shim: restart 1 of 2 after rank 3 exited with status 7 (attempt 1 ran "
                    "100.0 s)\n");
  EXPECT_EQ(o.message, "aml-shim: rank 3 failed\n");
  EXPECT_TRUE(o.print_own_failure);
  // The next round starts with nobody's word.
  a.NewRound();
  EXPECT_TRUE(a.ended().empty());
}

// Short attempts back off, the second by 1 s, the third by 2 s.
TEST(Attempts, ShortAttemptsBackOffBeforeTheNext) {
  Attempts a(5);
  double backoffs[3] = {};
  for (int i = 0; i < 3; ++i) {
    a.Began(1000);
    AttemptRecord r = Failure(a, 2, 7);
    r.first_output_wall = 1000.5;  // output before its last second: progress
    ASSERT_TRUE(a.Open(r).restart);
    a.NewRound();
    a.NoteEnded(0, 1000.5);
    ASSERT_TRUE(a.Close(3000).restart);
    backoffs[i] = a.backoff_s();
    EXPECT_DOUBLE_EQ(a.backoff_until(), 3000 + a.backoff_s());
    a.TakeRestart();
  }
  EXPECT_DOUBLE_EQ(backoffs[0], 0);
  EXPECT_DOUBLE_EQ(backoffs[1], 1);
  EXPECT_DOUBLE_EQ(backoffs[2], 2);
  EXPECT_NE(a.list().size(), 0u);
}

TEST(Attempts, NoRestartLeftKeepsTheAttemptAtOnceAndTheRecordSaysWhy) {
  Attempts a(1);
  a.Began(1000);
  a.Follow(1);  // one restart made
  EXPECT_FALSE(a.MayRestart());
  RestartVerdict v = a.Open(Failure(a, 3, 7));
  EXPECT_FALSE(v.restart);
  EXPECT_EQ(v.why_not, "--max-restarts 1 spent");
  ASSERT_EQ(a.list().size(), 1u);
  EXPECT_EQ(a.list()[0].number, 2);
  StopOrder own = StopOrder::Of(7, "aml-shim: rank 3 exited with status 7\n", "");
  a.Write(&own, v.why_not);
  EXPECT_EQ(own.why_not, "--max-restarts 1 spent");
  EXPECT_NE(own.trailer.find("attempt 2"), std::string::npos) << own.trailer;
  EXPECT_NE(own.attempts_json.find("\"attempt\":2"), std::string::npos) << own.attempts_json;
  // Without --max-restarts the record has no attempts.
  Attempts none(0);
  StopOrder plain = StopOrder::Of(7, "x\n", "");
  none.Keep(Failure(none, 1, 7));
  none.Write(&plain, "no --max-restarts");
  EXPECT_EQ(plain.trailer, "");
  EXPECT_EQ(plain.attempts_json, "");
}

// A new root goes on from its old root's record: the next attempt is
// numbered after the last one it holds.
TEST(Attempts, ANewRootGoesOnFromTheRecordItWasHanded) {
  Attempts a(3);
  AttemptRecord first;
  first.number = 1;
  first.exit_code = 7;
  a.Adopt({first}, 1, 5000, {"gpu002"});
  EXPECT_EQ(a.restarts(), 1);
  EXPECT_DOUBLE_EQ(a.began(), 5000);
  AttemptRecord r = a.New(5010);
  EXPECT_EQ(r.number, 2);
  EXPECT_DOUBLE_EQ(r.duration_s, 10);
  EXPECT_EQ(r.nodes, (std::vector<std::string>{"gpu002"}));
  ASSERT_EQ(a.list().size(), 1u);
}

// --warm-restart: each shim says once how its ranks of a restart started;
// the attempt's record sums them, and a new attempt starts the sums anew.
TEST(Attempts, ARestartsRecordSumsHowEveryShimsRanksStarted) {
  Attempts a(2);
  a.Began(1000);
  ASSERT_TRUE(a.Open(Failure(a, 100, 7)).restart);
  a.NewRound();
  a.NoteEnded(0, 0);
  ASSERT_TRUE(a.Close(1200).restart);  // attempt 2 begins
  EXPECT_TRUE(a.NoteWarm(0, 2, 0));
  EXPECT_TRUE(a.NoteWarm(1, 1, 1));
  EXPECT_FALSE(a.NoteWarm(1, 2, 0)) << "said again (after a move below the heir): once";
  EXPECT_EQ(a.warm_shims(), 2);
  RestartVerdict v = a.Open(Failure(a, 300, 7));
  ASSERT_TRUE(v.restart) << v.why_not;
  a.NewRound();
  a.NoteEnded(0, 0);
  ASSERT_TRUE(a.Close(1500).restart);  // attempt 3 begins: nothing said of it yet
  EXPECT_EQ(a.warm_shims(), 0);
  EXPECT_EQ(a.started_warm() + a.started_cold(), 0);
  ASSERT_EQ(a.list().size(), 2u);
  EXPECT_EQ(a.list()[0].warm_shims, 0) << "the first attempt is no restart's";
  const AttemptRecord& second = a.list()[1];
  EXPECT_EQ(second.warm_shims, 2);
  EXPECT_EQ(second.started_warm, 3);
  EXPECT_EQ(second.started_cold, 1);
  const std::string json = AttemptsJson(a.list());
  EXPECT_NE(json.find("\"attempt\":2,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"warm_restart\":{\"shims\":2,\"warm\":3,\"cold\":1}"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("warm_restart"), json.rfind("warm_restart")) << "attempt 1 has none";
}

// An attempt the budget does not restart has no round: its record is kept
// as it fails, with what the shims said by then.
TEST(Attempts, TheLastAttemptsRecordHasItsStartsWithoutARound) {
  Attempts a(1);
  a.Began(1000);
  ASSERT_TRUE(a.Open(Failure(a, 100, 7)).restart);
  a.NewRound();
  a.NoteEnded(0, 0);
  ASSERT_TRUE(a.Close(1200).restart);
  a.NoteWarm(0, 1, 0);
  a.NoteWarm(1, 0, 1);
  EXPECT_FALSE(a.Open(Failure(a, 300, 7)).restart);
  ASSERT_EQ(a.list().size(), 2u);
  EXPECT_EQ(a.list()[1].warm_shims, 2);
  EXPECT_EQ(a.list()[1].started_warm, 1);
  EXPECT_EQ(a.list()[1].started_cold, 1);
}

}  // namespace
}  // namespace aml
