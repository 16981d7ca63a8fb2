#include "launch/keeper.h"

#include <climits>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <climits>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "shim/base/clock.h"

namespace aml {
namespace {

constexpr int kDone = 0;  // message: the shim ends in order
// Messages below any -pgid (pid_max is at most 2^22): the shim sent every
// group its SIGTERM (the stop has begun: its grace is the shim's, cut short
// by whoever killed the shim), and a new attempt began (--max-restarts).
constexpr int kTermSent = INT_MIN;
constexpr int kTermCleared = INT_MIN + 1;

// Closes every descriptor but `keep` (close_range where the kernel has it).
void CloseAllBut(int keep, int max_fd) {
#ifdef SYS_close_range
  if (keep > 0 && syscall(SYS_close_range, 0u, static_cast<unsigned>(keep - 1), 0u) == 0 &&
      syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0)
    return;
#endif
  for (int fd = 0; fd < max_fd; ++fd)
    if (fd != keep) close(fd);
}

}  // namespace

long long StartTicks(pid_t pid) {
  if (pid <= 0) return -1;
  char path[40] = "/proc/";
  char digits[16];
  int n = 0;
  for (pid_t v = pid; v > 0 && n < 15; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  size_t at = 6;
  while (n > 0) path[at++] = digits[--n];
  const char tail[] = "/stat";
  for (char c : tail) path[at++] = c;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return -1;
  buf[got] = '\0';
  // "pid (comm) state ppid ... starttime ...": comm may hold spaces and ')',
  // so fields are counted from the last ')'; starttime is field 22.
  char* c = nullptr;
  for (char* p = buf; *p; ++p)
    if (*p == ')') c = p;
  if (!c) return -1;
  for (int field = 2; field < 22; ++field) {
    while (*c && *c != ' ') ++c;
    while (*c == ' ') ++c;
    if (!*c) return -1;
  }
  long long ticks = 0;
  for (; *c >= '0' && *c <= '9'; ++c) ticks = ticks * 10 + (*c - '0');
  return ticks;
}

bool StartedSince(pid_t pgid, long long since) {
  if (pgid <= 1) return false;
  if (since < 0) return true;  // no /proc to tell: any group but 0, 1 and -1
  return StartTicks(pgid) >= since;
}

namespace {

// Drops the groups that have no member left (never signalled again).
size_t DropEmpty(int* groups, size_t n) {
  for (size_t i = 0; i < n;) {
    if (kill(-groups[i], 0) != 0 && errno == ESRCH) groups[i] = groups[--n];
    else ++i;
  }
  return n;
}

// The keeper's whole life; async-signal-safe calls only (the shim may have
// threads from a dlopen'ed MPI), no allocation: `groups` has its capacity.
[[noreturn]] void KeeperMain(int fd, int* groups, size_t capacity, int max_fd, double grace_s,
                             const char* remove_dir) {
  setpgid(0, 0);  // out of the shim's group: mpirun's SIGKILL to it misses us
  // Every group the shim names is started after the keeper.
  const long long born = StartTicks(getpid());
  CloseAllBut(fd, max_fd);
  size_t n = 0;
  bool term_sent = false;
  for (;;) {
    int value = 0;
    ssize_t got = read(fd, &value, sizeof value);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(sizeof value)) break;  // end of file: the shim died
    if (value == kDone) _exit(0);
    if (value == kTermSent || value == kTermCleared) {
      term_sent = value == kTermSent;
      continue;
    }
    if (value > 0) {
      if (n < capacity && StartedSince(value, born)) groups[n++] = value;
      continue;
    }
    for (size_t i = 0; i < n; ++i)
      if (groups[i] == -value) groups[i] = groups[--n];
  }
  // The shim died before it could pass anything on (mpirun SIGKILLs a shim
  // that was not scheduled between its SIGTERM and SIGKILL): the children
  // get SIGTERM, as the shim would have sent, then SIGKILL after the grace.
  // When the shim had already sent it, a second would be a second request
  // (a handler may take it as "abort now"), and whoever killed the shim has
  // ended the stop's grace: SIGKILL at once.
  if (!term_sent)
    for (size_t i = 0; i < n; ++i) kill(-groups[i], SIGTERM);
  const double kill_at = MonotonicSeconds() + (term_sent ? 0.0 : grace_s);
  while ((n = DropEmpty(groups, n)) > 0 && MonotonicSeconds() < kill_at) {
    timespec pause{0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  for (size_t i = 0; i < n; ++i) kill(-groups[i], SIGKILL);
  // The shim's private directory, if nothing was left in it.
  if (remove_dir[0] != '\0') rmdir(remove_dir);
  _exit(0);
}

}  // namespace

Keeper::~Keeper() {
  if (fd_ >= 0) close(fd_);
}

Status Keeper::Start(size_t max_groups, double grace_s, const std::string& remove_dir) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    return Error{std::string("cannot create the keeper's pipe: ") + std::strerror(errno)};
  std::vector<int> groups(max_groups + 1);
  rlimit nofile{};
  int max_fd = 1024;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    max_fd = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20));
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return Error{std::string("cannot start the keeper (fork): ") + std::strerror(e)};
  }
  if (pid == 0) KeeperMain(p[0], groups.data(), groups.size(), max_fd, grace_s, remove_dir.c_str());
  close(p[0]);
  setpgid(pid, pid);  // also from here: no window where it shares our group
  fd_ = p[1];
  pid_ = pid;
  return Ok();
}

void Keeper::Send(int value) {
  if (fd_ < 0) return;
  // 4 bytes to a pipe are written whole or not at all; a dead keeper (EPIPE,
  // SIGPIPE is ignored by the supervisor) leaves nothing to do.
  while (write(fd_, &value, sizeof value) < 0 && errno == EINTR) {
  }
}

void Keeper::Watch(pid_t pgid) { Send(pgid); }
void Keeper::TermSent(bool sent) { Send(sent ? kTermSent : kTermCleared); }
void Keeper::Forget(pid_t pgid) { Send(-pgid); }

void Keeper::Lost() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  pid_ = -1;
}

void Keeper::Dismiss() {
  if (pid_ <= 0) return;
  Send(kDone);
  close(fd_);
  fd_ = -1;
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace aml
