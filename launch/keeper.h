// The keeper: a small process that ends this shim's children if the shim
// dies without doing so itself (README.md, "Per-node launch and supervision").
//
// mpirun sends a shim SIGTERM and, odls_base_sigkill_timeout seconds later
// (1 s by default), SIGKILL; a shim that is SIGKILLed, or that was not
// scheduled in between, cannot pass anything on, and its children sit in
// process groups of their own, so nothing else reaches them. The keeper is
// forked before the first child, in a process group of its own, and holds the
// read end of a pipe whose write end only the shim holds (close-on-exec, so no
// child inherits it). The shim names each child's process group as it starts
// and says "done" when it ends in order; end of file without "done" means the
// shim died: the keeper sends SIGTERM to every group still named (what the
// shim would have forwarded), SIGKILL to those not empty after the grace
// period, then exits. The keeper allocates nothing after the fork. It takes
// a group only if its leader started after the keeper did (never 0, 1 or
// -1): even a byte stream that reached its pipe by mistake cannot name a
// process that was there before the shim started its children.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "shim/base/result.h"

namespace aml {

// A process's start time (clock ticks after boot, /proc/PID/stat field 22,
// read async-signal-safely), or -1.
long long StartTicks(pid_t pid);
// `pgid` may be a group the keeper ends: never 0, 1 or -1 (kill(-1) is every
// process of the user), and its leader started at `since` or later (-1:
// unknown, no /proc). A leader reparented after the shim died still counts.
bool StartedSince(pid_t pgid, long long since);

class Keeper {
 public:
  Keeper() = default;
  Keeper(const Keeper&) = delete;
  Keeper& operator=(const Keeper&) = delete;
  ~Keeper();

  // Forks the keeper, able to hold `max_groups` groups; `grace_s` between
  // its SIGTERM and its SIGKILL; `remove_dir`, if not empty, is removed
  // after the SIGKILL when it is empty (the shim's private directory).
  Status Start(size_t max_groups, double grace_s, const std::string& remove_dir = "");
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // The shim's child `pgid` leads a group the keeper must end with the shim.
  void Watch(pid_t pgid);
  // Every group got the shim's SIGTERM (true), or a new attempt started
  // (false): if the shim dies now, the groups get SIGKILL at once, not a
  // second SIGTERM and a grace.
  void TermSent(bool sent);
  // The group is empty (its leader reaped, no member left): never signal it.
  void Forget(pid_t pgid);
  // Orderly end: the keeper exits without signalling anything; reaps it.
  void Dismiss();
  // The keeper died (reaped by the caller): nothing more to tell it.
  void Lost();

 private:
  void Send(int value);
  int fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace aml
