#include "launch/lifeline.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/base/read_no_follow.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace aml {

Lifeline::~Lifeline() {
  if (fd_ >= 0) close(fd_);
}

void Lifeline::WatchParent() {
  const pid_t parent = getppid();
  if (parent <= 1) return;
  parent_ = parent;
  std::string comm =
      ReadNoFollow(AT_FDCWD, "/proc/" + std::to_string(parent) + "/comm", 64);
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  name_ = comm.empty() ? "its parent" : comm;
  // The raw system call: the release binary needs nothing newer than glibc 2.17.
  const long fd = syscall(SYS_pidfd_open, parent, 0);
  if (fd >= 0) {
    fd_ = static_cast<int>(fd);
    fcntl(fd_, F_SETFD, FD_CLOEXEC);  // pidfd_open sets it; said for the reader
  }
  // A parent that died before the pidfd was opened: this process was
  // reparented already, which CheckGone sees.
}

bool Lifeline::CheckGone() const {
  if (parent_ <= 0) return false;
  if (getppid() != parent_) return true;
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

std::string Lifeline::What() const {
  return "the launcher (" + name_ + ", pid " + std::to_string(parent_) + ") is gone";
}

}  // namespace aml
