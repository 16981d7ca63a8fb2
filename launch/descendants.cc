#include "launch/descendants.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "shim/base/proc_tree.h"

namespace aml {

std::vector<pid_t> ListChildren(pid_t except) {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  // /proc/<pid>/task/<tid>/children lists each thread's children; aml-shim
  // is single-threaded, so its main thread's list is complete.
  std::string path = "/proc/" + std::to_string(self) + "/task/" + std::to_string(self) + "/children";
  std::ifstream f(path);
  if (f) {
    pid_t p;
    while (f >> p)
      if (p != except) out.push_back(p);
    return out;
  }
  // Kernels without CONFIG_PROC_CHILDREN: scan /proc/*/stat for our pid.
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == except) continue;
    std::string comm;
    pid_t ppid = 0;
    if (ReadProcStat(static_cast<pid_t>(pid), &comm, &ppid) && ppid == self)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

bool HasDescendants(pid_t except) { return !ListChildren(except).empty(); }

void SignalDescendants(int sig, pid_t except) {
  for (pid_t p : ListChildren(except)) {
    pid_t pgid = getpgid(p);
    if (pgid > 0 && pgid != getpgrp()) kill(-pgid, sig);
    kill(p, sig);
  }
}

}  // namespace aml
