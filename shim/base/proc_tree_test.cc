#include "shim/base/proc_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>

namespace aml {
namespace {

std::string Comm(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(f, s);
  return s;
}

TEST(AncestorNamed, FindsTheNearestAncestorByName) {
  // From a child, this test process is the nearest ancestor with its name.
  const pid_t self = getpid();
  const std::string name = Comm(self);
  pid_t child = fork();
  if (child == 0) {
    auto found = AncestorNamed(name);
    _exit(found && *found == self ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(AncestorNamed("no-such-process-name").has_value());
}

TEST(ReadProcStat, ANameWithSpacesAndParentheses) {
  pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_NAME, "a) b (c");
    pause();
    _exit(0);
  }
  std::string comm;
  pid_t parent = 0;
  bool ok = false;
  for (int i = 0; i < 200 && !(ok && comm == "a) b (c"); ++i) {
    ok = ReadProcStat(child, &comm, &parent);
    usleep(5000);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(ok);
  EXPECT_EQ(comm, "a) b (c");
  EXPECT_EQ(parent, getpid());
  EXPECT_FALSE(ReadProcStat(child, &comm, &parent));  // reaped: gone
}

TEST(ProcCpuSeconds, CountsWhatAProcessSpendsAndItsReapedChildren) {
  // A child (named with a ')' to be read past) that burns CPU in a child of
  // its own, reaps it, then waits: its CPU time is the grandchild's.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_NAME, "x) 1 2 3");
    pid_t g = fork();
    if (g == 0) {
      timespec t0{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
      for (timespec t = t0; t.tv_sec - t0.tv_sec < 1;) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
      _exit(0);
    }
    waitpid(g, nullptr, 0);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  auto cpu = ProcCpuSeconds(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GE(*cpu, 0.9);
  EXPECT_LT(*cpu, 10.0);
  EXPECT_FALSE(ProcCpuSeconds(child).has_value());  // reaped: gone
}

}  // namespace
}  // namespace aml
