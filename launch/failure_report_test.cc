#include "launch/failure_report.h"
#include "launch/wait_status.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace aml {
namespace {

int Exited(int code) { return code << 8; }
int Signaled(int sig) { return sig; }

TEST(FailureReport, ExitCodes) {
  EXPECT_EQ(ExitCodeFor(Exited(7)), 7);
  EXPECT_EQ(ExitCodeFor(Signaled(9)), 137);
  EXPECT_EQ(ExitCodeFor(Signaled(15)), 143);
  EXPECT_EQ(DescribeStatus(Exited(7)), "exit status 7");
  EXPECT_EQ(DescribeStatus(Signaled(9)), "signal 9 (SIGKILL)");
  EXPECT_EQ(SignalName(64), "signal 64");
}

TEST(FailureReport, LastLines) {
  EXPECT_EQ(LastLines("a\nb\n\nc\n", 2), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(LastLines("partial", 5), (std::vector<std::string>{"partial"}));
  EXPECT_TRUE(LastLines("", 5).empty());
}

TEST(FailureReport, SummaryNamesRankHostStatusAndStderr) {
  ChildOutcome o;
  o.rank = 5;
  o.local_rank = 2;
  o.node_rank = 1;
  o.host = "gpu002";
  o.argv = {"python", "train.py"};
  o.wait_status = Exited(7);
  o.runtime_s = 12.5;
  o.stderr_tail = "Traceback (most recent call last):\nValueError: bad batch\n";
  std::string s = FormatFailureSummary(o);
  EXPECT_NE(s.find("first failure: rank 5 (local rank 2, node 1, host gpu002)"), std::string::npos) << s;
  EXPECT_NE(s.find("exit status 7 -> aml-shim exits 7"), std::string::npos);
  EXPECT_NE(s.find("12.50 s"), std::string::npos);
  EXPECT_NE(s.find("| ValueError: bad batch"), std::string::npos);
  for (size_t pos = 0; pos < s.size(); pos = s.find('\n', pos) + 1)
    EXPECT_EQ(s.compare(pos, 10, "aml-shim: "), 0);
  std::string j = FailureJson(o);
  EXPECT_NE(j.find("\"rank\":5"), std::string::npos) << j;
  EXPECT_NE(j.find("\"exit_code\":7"), std::string::npos);
  EXPECT_NE(j.find("\"signal\":null"), std::string::npos);
  EXPECT_NE(j.find("\"ValueError: bad batch\""), std::string::npos);
}

}  // namespace
}  // namespace aml
