#include "launch/keeper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "launch/error_file.h"
#include "launch/tagged_procs.h"
#include "shim/base/clock.h"
#include "shim/base/random_token.h"

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

// Removes what is in the directory open as `fd` (files, and the
// directories in it to `depth` levels: error_file.h's kErrorDirDepth) with no allocation (the keeper runs after a fork): getdents64 into
// the stack. Closes `fd`.
void EmptyDirNoAlloc(int fd, int depth) {
  alignas(8) char buf[4096];
  for (;;) {
    const long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (got <= 0) break;
    for (long at = 0; at < got;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      unsigned short reclen;
      std::memcpy(&reclen, buf + at + 16, sizeof reclen);
      const char* name = buf + at + 19;
      if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0 &&
          unlinkat(fd, name, 0) != 0 && errno == EISDIR && depth > 0) {
        const int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) EmptyDirNoAlloc(sub, depth - 1);
        unlinkat(fd, name, AT_REMOVEDIR);
      }
      at += reclen;
    }
  }
  close(fd);
}

void RemoveDirNoAlloc(const char* dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) EmptyDirNoAlloc(fd, kErrorDirDepth);
  rmdir(dir);
}

}  // namespace

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
                             const char* remove_dir, const char* tag, size_t tag_len) {
  setpgid(0, 0);  // out of the shim's group: mpirun's SIGKILL to it misses us
  // Every group the shim names is started after the keeper.
  const long long born = StartTicks(getpid());
  const pid_t self = getpid();
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
  // ended the stop's grace: SIGKILL at once. Besides the named groups: every
  // process that carries the shim's tag (a child being spawned when the shim
  // died, descendants that left their rank's group).
  if (!term_sent) {
    for (size_t i = 0; i < n; ++i) kill(-groups[i], SIGTERM);
    SignalTagged(tag, tag_len, born, SIGTERM, self);
  }
  const double kill_at = MonotonicSeconds() + (term_sent ? 0.0 : grace_s);
  double next_scan = 0;
  int tagged = 1;
  while (MonotonicSeconds() < kill_at) {
    n = DropEmpty(groups, n);
    if (MonotonicSeconds() >= next_scan) {  // /proc is walked 10 times a second
      tagged = SignalTagged(tag, tag_len, born, 0, self);
      next_scan = MonotonicSeconds() + 0.1;
    }
    if (n == 0 && tagged == 0) break;
    timespec pause{0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  for (size_t i = 0; i < n; ++i) kill(-groups[i], SIGKILL);
  // Until two walks of /proc, 50 ms apart, find none: a child the shim was
  // spawning shows the tag only once it has exec'd.
  for (int round = 0, clean = 0; round < 200 && clean < 2; ++round) {
    clean = SignalTagged(tag, tag_len, born, SIGKILL, self) == 0 ? clean + 1 : 0;
    timespec pause{0, 50 * 1000 * 1000};
    if (clean < 2) nanosleep(&pause, nullptr);
  }
  // The shim's private directory and the error files in it.
  if (remove_dir[0] != '\0') RemoveDirNoAlloc(remove_dir);
  _exit(0);
}

}  // namespace

Keeper::~Keeper() {
  // Unreleased, the keeper reads end of file: as if the shim had died.
  if (fd_ >= 0) close(fd_);
  else Dismiss();  // released: reaped
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
  tag_ = RandomToken();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return Error{std::string("cannot start the keeper (fork): ") + std::strerror(e)};
  }
  if (pid == 0)
    KeeperMain(p[0], groups.data(), groups.size(), max_fd, grace_s, remove_dir.c_str(),
               tag_.c_str(), tag_.size());
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

void Keeper::Watch(const std::vector<pid_t>& pgids) { SendAll(pgids, 1); }

void Keeper::SendAll(const std::vector<pid_t>& pgids, int sign) {
  if (fd_ < 0) return;
  // Writes of at most PIPE_BUF bytes to a pipe are whole: values never split.
  constexpr size_t kPerWrite = PIPE_BUF / sizeof(int);
  for (size_t at = 0; at < pgids.size(); at += kPerWrite) {
    std::vector<int> values;
    for (size_t i = at; i < std::min(pgids.size(), at + kPerWrite); ++i) values.push_back(sign * pgids[i]);
    const size_t bytes = values.size() * sizeof(int);
    while (write(fd_, values.data(), bytes) < 0 && errno == EINTR) {
    }
  }
}
void Keeper::TermSent(bool sent) { Send(sent ? kTermSent : kTermCleared); }
void Keeper::Forget(const std::vector<pid_t>& pgids) { SendAll(pgids, -1); }

void Keeper::Lost() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  pid_ = -1;
}

void Keeper::Release() {
  if (pid_ <= 0 || fd_ < 0) return;
  Send(kDone);
  close(fd_);
  fd_ = -1;
}

void Keeper::Dismiss() {
  Release();
  if (pid_ <= 0) return;
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace aml
