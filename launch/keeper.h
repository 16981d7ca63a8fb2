// The keeper: a small process that ends this shim's children if the shim
// dies without doing so itself (docs/supervision.md, "Per-node launch and supervision").
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
// shim would have forwarded) and to every process that carries the shim's
// tag in its environment (launch/tagged_procs.h), SIGKILL to those left
// after the grace period, then exits. The keeper allocates nothing after
// the fork. It takes a group only if its leader started after the keeper did
// (never 0, 1 or -1): even a byte stream that reached its pipe by mistake
// cannot name a process that was there before the shim started its children.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "launch/proc_start.h"
#include "shim/base/result.h"

namespace aml {

class Keeper {
 public:
  Keeper() = default;
  Keeper(const Keeper&) = delete;
  Keeper& operator=(const Keeper&) = delete;
  ~Keeper();

  // Forks the keeper, able to hold `max_groups` groups; `grace_s` between
  // its SIGTERM and its SIGKILL; `remove_dir`, if not empty, is removed
  // with the files in it after the SIGKILL (the shim's private directory,
  // which may not exist yet, or no more).
  Status Start(size_t max_groups, double grace_s, const std::string& remove_dir = "");
  bool running() const { return pid_ > 0; }
  // The shim's tag (launch/tagged_procs.h): 32 random hex digits, set by
  // Start. A process that carries it in kKeeperTagVar is ended with the
  // groups.
  const std::string& tag() const { return tag_; }
  pid_t pid() const { return pid_; }
  // The shim's child `pgid` leads a group the keeper must end with the shim.
  void Watch(pid_t pgid);
  // The same for several, in one write (one wake-up of the keeper): the
  // children of an attempt, named once all are started (one that the shim
  // started before it died unnamed carries its tag: found all the same).
  void Watch(const std::vector<pid_t>& pgids);
  // Every group got the shim's SIGTERM (true), or a new attempt started
  // (false): if the shim dies now, the groups get SIGKILL at once, not a
  // second SIGTERM and a grace.
  void TermSent(bool sent);
  // The groups are empty (each leader reaped, no member left): never signal
  // them (one write: one wake-up of the keeper).
  void Forget(const std::vector<pid_t>& pgids);
  // Orderly end: the keeper exits without signalling anything. Release tells
  // it, and Dismiss (or the destructor) also reaps it: work done in between
  // overlaps its exit.
  void Release();
  void Dismiss();
  // The keeper died (reaped by the caller): nothing more to tell it.
  void Lost();

 private:
  void Send(int value);
  void SendAll(const std::vector<pid_t>& pgids, int sign);
  int fd_ = -1;
  pid_t pid_ = -1;
  std::string tag_;
};

}  // namespace aml
