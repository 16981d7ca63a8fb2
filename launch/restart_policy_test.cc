#include "launch/restart_policy.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

AttemptRecord Failed(int number, int code) {
  AttemptRecord a;
  a.number = number;
  a.exit_code = code;
  a.what = "rank 3 exited with status " + std::to_string(code);
  a.rank = 3;
  a.duration_s = 12.34;
  a.failure_wall = 1.7e9 + 12.34;
  a.first_output_wall = 1.7e9 + 2;  // ranks wrote output 10 s before it failed
  a.outputs_known = true;
  return a;
}

TEST(RestartPolicy, OneRankFailingIsRestartedWhileTheBudgetLasts) {
  EXPECT_TRUE(DecideRestart(Failed(1, 7), nullptr, 0, 2).restart);
  EXPECT_TRUE(DecideRestart(Failed(2, 7), nullptr, 1, 2).restart);
  RestartVerdict v = DecideRestart(Failed(3, 7), nullptr, 2, 2);
  EXPECT_FALSE(v.restart);
  EXPECT_EQ(v.why_not, "--max-restarts 2 spent");
  EXPECT_FALSE(DecideRestart(Failed(1, 7), nullptr, 0, 0).restart);
}

TEST(RestartPolicy, FailuresARestartCannotFixAreNotRestarted) {
  for (int code : {125, 126, 127}) {
    RestartVerdict v = DecideRestart(Failed(1, code), nullptr, 0, 3);
    EXPECT_FALSE(v.restart) << code;
    EXPECT_NE(v.why_not.find("(" + std::to_string(code) + ")"), std::string::npos) << v.why_not;
  }
}

// A quiet job (it logs to files, prints nothing) is restarted, in its first
// attempt too; a script that cannot start makes two attempts, not the budget.
TEST(RestartPolicy, TheSameFailureTwiceWithoutProgressIsNotRestartedAgain) {
  AttemptRecord first = Failed(1, 1);
  first.first_output_wall = 0;  // nothing written
  first.duration_s = 6;         // a quiet DDP job that failed at its second epoch
  EXPECT_FALSE(MadeProgress(first));
  EXPECT_TRUE(DecideRestart(first, nullptr, 0, 5).restart);
  AttemptRecord second = Failed(2, 1);
  second.first_output_wall = 0;
  second.duration_s = 0.4;
  RestartVerdict v = DecideRestart(second, &first, 1, 5);
  EXPECT_FALSE(v.restart);
  EXPECT_EQ(v.why_not,
            "not restarted: attempts 1 and 2 both failed with exit status 1 without progress (no "
            "output before their last second, each ran under 60 s): an error in the script, its "
            "imports or its arguments fails every attempt the same way");
  // Output before the failing rank's last second is progress; its traceback is not.
  second.first_output_wall = second.failure_wall - 0.5;
  EXPECT_FALSE(DecideRestart(second, &first, 1, 5).restart);
  second.first_output_wall = second.failure_wall - 1.5;
  EXPECT_TRUE(DecideRestart(second, &first, 1, 5).restart);
  // So is a long run, quiet or not (a job that logs to files trains).
  second.first_output_wall = 0;
  second.duration_s = kProgressS;
  EXPECT_TRUE(DecideRestart(second, &first, 1, 5).restart);
  // Another status is another failure.
  second.duration_s = 0.4;
  second.exit_code = 7;
  EXPECT_TRUE(DecideRestart(second, &first, 1, 5).restart);
  // Not yet known (the shims have not all ended their ranks): no verdict on it.
  second.exit_code = 1;
  second.outputs_known = false;
  EXPECT_TRUE(DecideRestart(second, &first, 1, 5).restart);
  // A hang's ranks are ended by aml-shim: it is restarted.
  second.outputs_known = true;
  second.hang = true;
  EXPECT_TRUE(DecideRestart(second, &first, 1, 5).restart);
}

TEST(RestartPolicy, ShortAttemptsInARowBackOffAndALongOneResetsIt) {
  std::vector<AttemptRecord> all;
  auto add = [&](double ran) {
    AttemptRecord a = Failed(static_cast<int>(all.size()) + 1, 3);
    a.duration_s = ran;
    all.push_back(a);
    return BackoffS(all);
  };
  EXPECT_EQ(add(1.2), 0);  // a single failure restarts at once
  EXPECT_EQ(add(0.1), 1);
  EXPECT_EQ(add(0.1), 2);
  EXPECT_EQ(add(0.1), 4);
  EXPECT_EQ(add(0.1), 8);
  EXPECT_EQ(add(0.1), 16);
  EXPECT_EQ(add(0.1), kMaxBackoffS);
  EXPECT_EQ(add(0.1), kMaxBackoffS);
  EXPECT_EQ(add(kProgressS), 0);  // an attempt that ran long
  EXPECT_EQ(add(0.1), 0);
  EXPECT_EQ(add(0.1), 1);
  EXPECT_EQ(RestartLine(all.back(), 11, 20, 1),
            "aml-shim: restart 11 of 20 after rank 3 exited with status 3 (attempt 11 ran 0.1 s; "
            "after a back-off of 1 s)\n");
}

TEST(RestartPolicy, ManyAttemptsShowTheFirstAndTheLastAndACount) {
  std::vector<AttemptRecord> all;
  for (int i = 1; i <= 250; ++i) all.push_back(Failed(i, 3));
  const std::string text = AttemptsText(all, 1000, "x");
  EXPECT_EQ(text,
            "aml-shim: 250 attempts (--max-restarts 1000); x:\n"
            "aml-shim:   attempt 1: rank 3 exited with status 3 after 12.3 s\n"
            "aml-shim:   attempt 2: rank 3 exited with status 3 after 12.3 s\n"
            "aml-shim:   attempt 3: rank 3 exited with status 3 after 12.3 s\n"
            "aml-shim:   ... 244 attempts more (failure.json lists them)\n"
            "aml-shim:   attempt 248: rank 3 exited with status 3 after 12.3 s\n"
            "aml-shim:   attempt 249: rank 3 exited with status 3 after 12.3 s\n"
            "aml-shim:   attempt 250: rank 3 exited with status 3 after 12.3 s\n");
  const std::string json = AttemptsJson(all);
  size_t records = 0;
  for (size_t at = json.find("\"attempt\":"); at != std::string::npos;
       at = json.find("\"attempt\":", at + 1))
    ++records;
  EXPECT_EQ(records, kKeptAttempts);
  EXPECT_NE(json.find("{\"attempt\":50,"), std::string::npos);
  EXPECT_EQ(json.find("{\"attempt\":51,"), std::string::npos);
  EXPECT_NE(json.find("{\"attempt\":201,"), std::string::npos);
  EXPECT_NE(json.find("{\"attempt\":250,"), std::string::npos);
}

TEST(RestartPolicy, RanksThatEndedWellCannotBeStartedAgain) {
  AttemptRecord a = Failed(1, 7);
  a.shims_ended_well = 1;
  RestartVerdict v = DecideRestart(a, nullptr, 0, 3);
  EXPECT_FALSE(v.restart);
  EXPECT_NE(v.why_not.find("1 shim had already ended with status 0"), std::string::npos);
}

TEST(RestartPolicy, WordsForTheOutputTheSummaryAndFailureJson) {
  EXPECT_EQ(RestartLine(Failed(1, 7), 1, 3),
            "aml-shim: restart 1 of 3 after rank 3 exited with status 7 (attempt 1 ran 12.3 s)\n");
  std::vector<AttemptRecord> all{Failed(1, 7), Failed(2, 7)};
  EXPECT_EQ(AttemptsText(all, 1, "--max-restarts 1 spent"),
            "aml-shim: 2 attempts (--max-restarts 1); --max-restarts 1 spent:\n"
            "aml-shim:   attempt 1: rank 3 exited with status 7 after 12.3 s\n"
            "aml-shim:   attempt 2: rank 3 exited with status 7 after 12.3 s\n");
  EXPECT_EQ(AttemptsText({Failed(1, 7)}, 0, "no --max-restarts"), "");
  const std::string json = AttemptsJson({Failed(1, 7)});
  EXPECT_EQ(json,
            "[{\"attempt\":1,\"duration_s\":12.340,\"exit_code\":7,\"first_failure\":"
            "\"rank 3 exited with status 7\",\"rank\":3,\"hang\":false}]");
  EXPECT_EQ(WithAttempts("{\"a\":1}\n", json, "x"),
            "{\"a\":1,\"attempts\":" + json + ",\"restart_refused\":\"x\"}\n");
  EXPECT_EQ(WithAttempts("{}", "[]", ""), "{\"attempts\":[]}");
}

}  // namespace
}  // namespace aml
