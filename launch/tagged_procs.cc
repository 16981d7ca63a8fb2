#include "launch/tagged_procs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "launch/proc_start.h"

// Linux 5.3 numbers, the same on every architecture aml-shim is built for;
// older headers (the release's Debian 11 root has them) may lack the names.
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace aml {
namespace {

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

bool Same(const char* a, const char* b, size_t len) {
  for (size_t i = 0; i < len; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

pid_t ParsePid(const char* name) {
  long long v = 0;
  if (!*name) return 0;
  for (; *name; ++name) {
    if (*name < '0' || *name > '9' || v > (1LL << 31)) return 0;
    v = v * 10 + (*name - '0');
  }
  return static_cast<pid_t>(v);
}

// One process: whether it carries the tag, then the signal (through its
// pidfd when there is one).
bool SignalIfTagged(pid_t pid, const char* tag, size_t len, long long since, int sig) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  char path[64];
  ProcPath(pid, "environ", path);
  bool found = false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);  // EACCES: another user's
  if (fd >= 0) {
    found = StreamHas(fd, tag, len) && StartedSince(pid, since);
    close(fd);
  }
  if (found && sig != 0) {
    if (pidfd >= 0) syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0);
    else kill(pid, sig);
  }
  if (pidfd >= 0) close(pidfd);
  return found;
}

}  // namespace

bool StreamHas(int fd, const char* tag, size_t len) {
  if (len == 0 || len > 1024) return false;
  char buf[8192];
  size_t have = 0;
  for (;;) {
    ssize_t got = read(fd, buf + have, sizeof buf - have);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    have += static_cast<size_t>(got);
    size_t i = 0;
    for (; i + len <= have; ++i)
      if (buf[i] == tag[0] && Same(buf + i, tag, len)) return true;
    // Keep the bytes a match could still start at.
    size_t kept = 0;
    for (size_t j = i; j < have; ++j) buf[kept++] = buf[j];
    have = kept;
  }
}

int SignalTagged(const char* tag, size_t len, long long since, int sig, pid_t skip) {
  int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int found = 0;
  alignas(8) char buf[8192];
  for (;;) {
    long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      const auto* d = reinterpret_cast<const Dirent64*>(buf + at);
      at += d->reclen;
      const pid_t pid = ParsePid(d->name);
      if (pid > 1 && pid != skip && SignalIfTagged(pid, tag, len, since, sig)) ++found;
    }
  }
  close(dir);
  return found;
}

}  // namespace aml
