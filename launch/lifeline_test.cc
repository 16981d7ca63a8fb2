#include "launch/lifeline.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace aml {
namespace {

// A process (the "launcher") starts a shim-like child that watches it, then
// dies without a word: the child's lifeline becomes readable and says who.
TEST(Lifeline, SeesItsParentGoAndNamesIt) {
  int ready[2], result[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(result), 0);
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    prctl(PR_SET_NAME, "fake-mpirun");
    const pid_t shim = fork();
    if (shim == 0) {
      Lifeline l;
      l.WatchParent();
      std::string verdict = "ok";
      if (!l.watching()) verdict = "not watching";
      else if (l.fd() < 0) verdict = "no pidfd";
      else if (l.CheckGone()) verdict = "gone too early";
      char c = 'r';
      if (write(ready[1], &c, 1) != 1) _exit(3);
      if (verdict == "ok") {
        pollfd p{l.fd(), POLLIN, 0};
        if (poll(&p, 1, 20000) != 1) verdict = "the pidfd never became readable";
        else if (!l.CheckGone()) verdict = "CheckGone said no";
        else verdict = l.What();
      }
      if (write(result[1], verdict.data(), verdict.size()) < 0) _exit(4);
      _exit(0);
    }
    char c;
    if (read(ready[0], &c, 1) != 1) _exit(5);
    _exit(0);  // the launcher dies, signalling nothing
  }
  close(ready[1]);
  close(result[1]);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = read(result[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(got, "the launcher (fake-mpirun, pid " + std::to_string(launcher) + ") is gone");
  close(ready[0]);
  close(result[0]);
}

TEST(Lifeline, AParentThatLivesIsNotGone) {
  Lifeline l;
  l.WatchParent();
  EXPECT_TRUE(l.watching());  // the test runner's parent (ctest, a shell) is not init
  EXPECT_FALSE(l.CheckGone());
}

}  // namespace
}  // namespace aml
