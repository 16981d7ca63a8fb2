#include "launch/idle_class.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "shim/base/read_no_follow.h"

namespace aml {
namespace {

// The I/O priority classes (ioprio_set(2)): not in every kernel header set
// this builds against.
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioClassShift = 13;
constexpr int kIoprioClassIdle = 3;
constexpr int kCapSysNice = 23;
constexpr int kPasses = 5;  // a thread started during a pass is found in the next

long IoprioGet(pid_t tid) { return syscall(SYS_ioprio_get, kIoprioWhoProcess, tid); }
long IoprioSet(pid_t tid, long prio) { return syscall(SYS_ioprio_set, kIoprioWhoProcess, tid, prio); }

bool HasCapSysNice() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[kCapSysNice / 32].effective >> (kCapSysNice % 32)) & 1u;
}

std::vector<pid_t> Threads(pid_t pid) {
  std::vector<pid_t> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.push_back(std::atoi(e->d_name));
  closedir(d);
  return out;
}

}  // namespace

void EnterIdleClassInChild() {
  sched_param none{};
  sched_setscheduler(0, SCHED_IDLE, &none);
  IoprioSet(0, static_cast<long>(kIoprioClassIdle) << kIoprioClassShift);
}

std::string WhyNotLeaveIdleClass() {
  if (HasCapSysNice()) return "";
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);
  rlimit limit{};
  if (errno == 0 && getrlimit(RLIMIT_NICE, &limit) == 0 &&
      (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= static_cast<rlim_t>(20 - nice)))
    return "";
  return "without CAP_SYS_NICE, RLIMIT_NICE " +
         (limit.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                          : std::to_string(limit.rlim_cur)) +
         " does not let a process leave the idle scheduling class at nice " +
         std::to_string(nice) + " (it takes " + std::to_string(20 - nice) + ")";
}

bool InIdleClass(pid_t tid) { return sched_getscheduler(tid) == SCHED_IDLE; }

std::string WhyEnding(pid_t pid) {
  const std::string status =
      ReadNoFollow(AT_FDCWD, "/proc/" + std::to_string(pid) + "/status", 1 << 14);
  if (status.empty()) return "ended";
  auto field = [&status](const char* name) {
    const size_t at = status.find(std::string("\n") + name + ":");
    if (at == std::string::npos) return std::string();
    const size_t from = status.find_first_not_of(" \t", at + std::strlen(name) + 2);
    return status.substr(from, status.find('\n', from) - from);
  };
  const std::string state = field("State");
  if (!state.empty() && (state[0] == 'Z' || state[0] == 'X')) return "ended";
  for (const char* pending : {"SigPnd", "ShdPnd"})
    if ((std::strtoull(field(pending).c_str(), nullptr, 16) >> (SIGKILL - 1)) & 1u)
      return "ended: signal 9 (SIGKILL)";
  return "";
}

Status LeaveIdleClass(pid_t pid) {
  const long io = IoprioGet(0);
  for (int pass = 0; pass < kPasses; ++pass) {
    bool moved = false;
    for (pid_t tid : Threads(pid)) {
      if (!InIdleClass(tid)) continue;
      sched_param none{};
      if (sched_setscheduler(tid, SCHED_OTHER, &none) != 0) {
        if (errno == ESRCH) continue;  // it ended meanwhile
        return Error{"thread " + std::to_string(tid) + " of pid " + std::to_string(pid) +
                     " cannot leave the idle scheduling class: " + std::strerror(errno)};
      }
      if (io >= 0) IoprioSet(tid, io);
      moved = true;
    }
    if (!moved) return Ok();
  }
  return Error{"pid " + std::to_string(pid) + " kept starting threads in the idle scheduling class"};
}

}  // namespace aml
