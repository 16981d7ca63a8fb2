#include "launch/keeper.h"

#include <string>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/tagged_procs.h"

namespace aml {
namespace {

// A child in a process group of its own that waits to be killed; it execs,
// as the supervisor's children do, so it holds no close-on-exec descriptor.
// With `env_entry` ("NAME=value"), that is its whole environment and it
// starts a session of its own, as a daemon that left its rank's group.
pid_t StartSleeper(const char* env_entry = nullptr) {
  pid_t pid = fork();
  if (pid == 0) {
    if (env_entry) {
      setsid();
      char* envp[] = {const_cast<char*>(env_entry), nullptr};
      execle("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr), envp);
    } else {
      setpgid(0, 0);
      execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  if (!env_entry) setpgid(pid, pid);
  return pid;
}

// Waits (with a deadline, not a timing assertion) for `pid`, now our child
// or reparented to us, to end; returns its status, or -1 if it did not.
int WaitEnd(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    usleep(10000);
  }
  return -1;
}

// A "shim" that starts a keeper and one watched sleeper, reports the
// sleeper's pid, then dies by SIGKILL, as mpirun would end it.
pid_t StartShim(int report_fd, bool forget, bool dismiss, bool ignore_term = false) {
  pid_t shim = fork();
  if (shim != 0) return shim;
  Keeper keeper;
  if (!keeper.Start(4, 0.3).ok()) _exit(3);
  if (ignore_term) signal(SIGTERM, SIG_IGN);  // inherited by the sleeper's exec
  pid_t sleeper = StartSleeper();
  keeper.Watch(sleeper);
  if (forget) keeper.Forget({sleeper});
  if (dismiss) keeper.Dismiss();
  if (write(report_fd, &sleeper, sizeof sleeper) != sizeof sleeper) _exit(4);
  raise(SIGKILL);
  _exit(5);
}

class KeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Orphans come to this test process, so it can wait for them.
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ASSERT_EQ(pipe(p_), 0);
  }
  void TearDown() override {
    close(p_[0]);
    close(p_[1]);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
  }
  pid_t RunShim(bool forget, bool dismiss, bool ignore_term = false) {
    pid_t shim = StartShim(p_[1], forget, dismiss, ignore_term);
    pid_t sleeper = -1;
    EXPECT_EQ(read(p_[0], &sleeper, sizeof sleeper), static_cast<ssize_t>(sizeof sleeper));
    int status = WaitEnd(shim, 10);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    return sleeper;
  }
  int p_[2];
};

// The keeper, orphaned when the shim died, is reparented to this test:
// waits for it to exit (it does once it has acted) and returns its pid.
pid_t WaitForKeeper(pid_t sleeper) {
  pid_t reaped = waitpid(-1, nullptr, 0);
  EXPECT_NE(reaped, sleeper);
  return reaped;
}

TEST_F(KeeperTest, TermsTheWatchedGroupWhenTheShimIsKilled) {
  pid_t sleeper = RunShim(false, false);
  int status = WaitEnd(sleeper, 10);
  ASSERT_NE(status, -1) << "the child outlived its SIGKILLed shim";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  WaitForKeeper(sleeper);
}

TEST_F(KeeperTest, KillsAGroupThatIgnoresSigtermAfterTheGrace) {
  pid_t sleeper = RunShim(false, false, /*ignore_term=*/true);
  int status = WaitEnd(sleeper, 10);
  ASSERT_NE(status, -1) << "the child outlived its SIGKILLed shim";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  WaitForKeeper(sleeper);
}

TEST_F(KeeperTest, LeavesAForgottenGroupAlone) {
  pid_t sleeper = RunShim(true, false);
  WaitForKeeper(sleeper);
  EXPECT_EQ(kill(sleeper, 0), 0) << "a forgotten group was killed";
  kill(sleeper, SIGKILL);
  EXPECT_NE(WaitEnd(sleeper, 10), -1);
}

TEST(KeeperGroups, NeitherZeroNorOneNorMinusOneNorAnOlderGroupIsTaken) {
  const long long me = StartTicks(getpid());
  ASSERT_GT(me, 0);
  EXPECT_EQ(StartTicks(1) <= me, true);
  usleep(20000);  // a clock tick (10 ms at USER_HZ 100) for the child to be younger
  pid_t child = StartSleeper();
  const long long born = StartTicks(child);
  EXPECT_TRUE(StartedSince(child, born));
  EXPECT_TRUE(StartedSince(child, me));
  EXPECT_FALSE(StartedSince(getpid(), born));  // older than the "keeper"
  for (pid_t bad : {0, 1, -1}) {
    EXPECT_FALSE(StartedSince(bad, me)) << bad;
    EXPECT_FALSE(StartedSince(bad, -1)) << bad;
  }
  kill(child, SIGKILL);
  EXPECT_NE(WaitEnd(child, 10), -1);
}

// A group whose leader is not the shim's child (this test process's own) is
// never signalled, whatever the pipe says (never 0, 1 or -1: above).
TEST(KeeperGroups, OnlyGroupsTheShimStartedAreTaken) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  pid_t stranger = StartSleeper();  // ours, older than the shim's keeper
  usleep(20000);  // a clock tick, so the keeper is younger
  pid_t shim = fork();
  if (shim == 0) {
    Keeper keeper;
    if (!keeper.Start(8, 0.3).ok()) _exit(3);
    keeper.Watch(stranger);
    pid_t own = StartSleeper();
    keeper.Watch(own);
    if (write(report[1], &own, sizeof own) != sizeof own) _exit(4);
    raise(SIGKILL);
    _exit(5);
  }
  pid_t own = -1;
  ASSERT_EQ(read(report[0], &own, sizeof own), static_cast<ssize_t>(sizeof own));
  WaitEnd(shim, 10);
  // The shim's own child is ended; the stranger is untouched.
  EXPECT_NE(WaitEnd(own, 10), -1) << "the shim's child outlived it";
  waitpid(-1, nullptr, 0);  // the keeper
  EXPECT_EQ(kill(stranger, 0), 0) << "the keeper signalled a group the shim did not start";
  kill(stranger, SIGKILL);
  EXPECT_NE(WaitEnd(stranger, 10), -1);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  close(report[0]);
  close(report[1]);
}

// A child the keeper was never told of (one being spawned when the shim was
// SIGKILLed), or a descendant that left its rank's group (setsid), carries
// the shim's tag: the keeper ends it too, SIGTERM first.
TEST_F(KeeperTest, EndsAProcessItWasNeverToldOfByTheShimsTag) {
  pid_t shim = fork();
  if (shim == 0) {
    Keeper keeper;
    if (!keeper.Start(4, 5).ok()) _exit(3);
    const std::string entry = std::string(kKeeperTagVar) + "=" + keeper.tag();
    pid_t escaped = StartSleeper(entry.c_str());  // never named to the keeper
    if (write(p_[1], &escaped, sizeof escaped) != sizeof escaped) _exit(4);
    raise(SIGKILL);
    _exit(5);
  }
  pid_t escaped = -1;
  ASSERT_EQ(read(p_[0], &escaped, sizeof escaped), static_cast<ssize_t>(sizeof escaped));
  WaitEnd(shim, 10);
  int status = WaitEnd(escaped, 20);
  ASSERT_NE(status, -1) << "a process with the shim's tag outlived it";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  WaitForKeeper(escaped);
}

TEST_F(KeeperTest, DismissedKeeperKillsNothing) {
  pid_t sleeper = RunShim(false, true);
  EXPECT_EQ(kill(sleeper, 0), 0) << "an orderly end killed the child";
  kill(sleeper, SIGKILL);
  EXPECT_NE(WaitEnd(sleeper, 10), -1);
}

}  // namespace
}  // namespace aml
