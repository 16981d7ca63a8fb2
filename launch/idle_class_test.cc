#include "launch/idle_class.h"

#include <dirent.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "launch/child.h"
#include "shim/base/env_snapshot.h"

namespace aml {
namespace {

constexpr int kIoprioClassIdle = 3;

int IoClass(pid_t tid) { return static_cast<int>(syscall(SYS_ioprio_get, 1, tid) >> 13); }

std::vector<pid_t> Tids(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') out.push_back(std::atoi(e->d_name));
  closedir(d);
  return out;
}

int Threads(pid_t pid) { return static_cast<int>(Tids(pid).size()); }

// A process of four threads, started in the idle class as a standby is.
pid_t StartIdle() {
  SpawnSpec spec;
  spec.idle_class = true;
  int code = 0;
  Result<SpawnedChild> child = Spawn(
      {"python3", "-c",
       "import threading, time\n"
       "for _ in range(3): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
       "time.sleep(60)\n"},
      EnvSnapshot::FromEnvp(environ), spec, &code);
  if (!child.ok()) return -1;
  for (int i = 0; i < 500 && Threads(child->pid) < 4; ++i) {
    timespec ms{0, 10 * 1000 * 1000};
    nanosleep(&ms, nullptr);
  }
  return child->pid;
}

void End(pid_t pid) {
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST(IdleClass, AStandbyAndEveryThreadItStartsWaitInTheIdleClassesAndLeaveThemAtItsOrder) {
  if (!WhyNotLeaveIdleClass().empty()) GTEST_SKIP() << WhyNotLeaveIdleClass();
  const pid_t pid = StartIdle();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(Threads(pid), 4);
  for (pid_t tid : Tids(pid)) {
    EXPECT_TRUE(InIdleClass(tid)) << "thread " << tid << " (inherited from its starter)";
    EXPECT_EQ(IoClass(tid), kIoprioClassIdle) << "thread " << tid;
  }
  Status back = LeaveIdleClass(pid);
  EXPECT_TRUE(back.ok()) << back.error().message;
  for (pid_t tid : Tids(pid)) {
    EXPECT_FALSE(InIdleClass(tid)) << "thread " << tid;
    EXPECT_EQ(IoClass(tid), IoClass(0)) << "thread " << tid << ": this shim's I/O class";
  }
  End(pid);
}

TEST(IdleClass, AProcessThatCouldNotLeaveItSaysWhyNamingTheLimit) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // As a user without CAP_SYS_NICE, under the default RLIMIT_NICE of 0.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    syscall(SYS_capget, &header, data);
    data[0].effective &= ~(1u << 23);
    syscall(SYS_capset, &header, data);
    rlimit none{0, 0};
    setrlimit(RLIMIT_NICE, &none);
    const std::string why = WhyNotLeaveIdleClass();
    _exit(why.find("RLIMIT_NICE 0") != std::string::npos &&
                  why.find("CAP_SYS_NICE") != std::string::npos
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(IdleClass, AProcessExitedButNotReapedIsEndingOneRunningIsNot) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  EXPECT_EQ(WhyEnding(child), "");
  kill(child, SIGTERM);
  std::string why;
  for (int i = 0; i < 500 && why.empty(); ++i) {
    timespec ms{0, 10 * 1000 * 1000};
    nanosleep(&ms, nullptr);
    why = WhyEnding(child);  // a zombie until reaped
  }
  EXPECT_EQ(why, "ended");
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace aml
