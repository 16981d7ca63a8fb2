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
  EXPECT_TRUE(DecideRestart(Failed(1, 7), 0, 2).restart);
  EXPECT_TRUE(DecideRestart(Failed(2, 7), 1, 2).restart);
  RestartVerdict v = DecideRestart(Failed(3, 7), 2, 2);
  EXPECT_FALSE(v.restart);
  EXPECT_EQ(v.why_not, "--max-restarts 2 spent");
  EXPECT_FALSE(DecideRestart(Failed(1, 7), 0, 0).restart);
}

TEST(RestartPolicy, FailuresARestartCannotFixAreNotRestarted) {
  for (int code : {125, 126, 127}) {
    RestartVerdict v = DecideRestart(Failed(1, code), 0, 3);
    EXPECT_FALSE(v.restart) << code;
    EXPECT_NE(v.why_not.find("(" + std::to_string(code) + ")"), std::string::npos) << v.why_not;
  }
}

TEST(RestartPolicy, AFirstAttemptThatFailedBeforeAnyOutputIsAFailureAtStart) {
  AttemptRecord a = Failed(1, 1);
  a.first_output_wall = 0;  // nothing written
  a.outputs_known = false;  // not yet: no verdict on it
  EXPECT_TRUE(DecideRestart(a, 0, 3).restart);
  a.outputs_known = true;
  RestartVerdict v = DecideRestart(a, 0, 3);
  EXPECT_FALSE(v.restart);
  EXPECT_NE(v.why_not.find("failed at start, before any rank wrote output"), std::string::npos);
  // Its traceback, in its last second, is not output that shows progress.
  a.first_output_wall = a.failure_wall - 0.5;
  EXPECT_FALSE(DecideRestart(a, 0, 3).restart);
  a.first_output_wall = a.failure_wall - 1.5;
  EXPECT_TRUE(DecideRestart(a, 0, 3).restart);
  a.first_output_wall = 0;
  // Later attempts ran before: the same pattern is restarted.
  a.number = 2;
  EXPECT_TRUE(DecideRestart(a, 1, 3).restart);
  // A hang's ranks are ended by aml-shim; it is restarted.
  a.number = 1;
  a.hang = true;
  EXPECT_TRUE(DecideRestart(a, 0, 3).restart);
}

TEST(RestartPolicy, RanksThatEndedWellCannotBeStartedAgain) {
  AttemptRecord a = Failed(1, 7);
  a.shims_ended_well = 1;
  RestartVerdict v = DecideRestart(a, 0, 3);
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
