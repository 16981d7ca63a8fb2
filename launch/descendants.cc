#include "launch/descendants.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "shim/base/proc_tree.h"

namespace aml {

std::vector<pid_t> ListChildren(const std::vector<pid_t>& except) {
  auto excepted = [&](long p) {
    for (pid_t e : except)
      if (e == p) return true;
    return false;
  };
  std::vector<pid_t> out;
  const pid_t self = getpid();
  // /proc/<pid>/task/<tid>/children lists each thread's children; aml-shim
  // is single-threaded, so its main thread's list is complete.
  const std::string path =
      "/proc/" + std::to_string(self) + "/task/" + std::to_string(self) + "/children";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    // "pid pid ... " in one read for a few hundred children, more reads past.
    std::string text;
    char buf[4096];
    for (;;) {
      const ssize_t got = read(fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      text.append(buf, static_cast<size_t>(got));
    }
    close(fd);
    const char* at = text.c_str();
    for (;;) {
      char* end = nullptr;
      const long p = std::strtol(at, &end, 10);
      if (end == at) break;
      if (p > 0 && !excepted(p)) out.push_back(static_cast<pid_t>(p));
      at = end;
    }
    return out;
  }
  // Kernels without CONFIG_PROC_CHILDREN: scan /proc/*/stat for our pid.
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || excepted(pid)) continue;
    std::string comm;
    pid_t ppid = 0;
    if (ReadProcStat(static_cast<pid_t>(pid), &comm, &ppid) && ppid == self)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

bool HasDescendants(const std::vector<pid_t>& except) { return !ListChildren(except).empty(); }

bool SignalDescendants(int sig, const std::vector<pid_t>& except) {
  const std::vector<pid_t> children = ListChildren(except);
  for (pid_t p : children) {
    pid_t pgid = getpgid(p);
    if (pgid > 0 && pgid != getpgrp()) kill(-pgid, sig);
    kill(p, sig);
  }
  return !children.empty();
}

}  // namespace aml
