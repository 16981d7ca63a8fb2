#include "launch/proc_start.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>

namespace aml {

void ProcPath(pid_t pid, const char* leaf, char* out) {
  const char head[] = "/proc/";
  size_t at = 0;
  for (size_t i = 0; head[i]; ++i) out[at++] = head[i];
  char digits[16];
  int n = 0;
  for (pid_t v = pid; v > 0 && n < 15; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  while (n > 0) out[at++] = digits[--n];
  out[at++] = '/';
  for (size_t i = 0; leaf[i] && at < 62; ++i) out[at++] = leaf[i];
  out[at] = '\0';
}

long long StartTicks(pid_t pid) {
  if (pid <= 0) return -1;
  char path[64];
  ProcPath(pid, "stat", path);
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

}  // namespace aml
