// The launcher's lifeline (docs/supervision.md, "Per-node launch and supervision"): a
// shim started by a launcher (mpirun or its daemon, slurmstepd, Hydra's
// proxy) ends its ranks when that launcher is gone, as Open MPI's daemons do
// when their lifeline to mpirun breaks and as slurmstepd does for its step.
// A SIGKILLed or crashed launcher signals nothing: without this the shim,
// reparented to init, would supervise its ranks (and hold their GPUs) for
// ever. The parent is watched through a pidfd (Linux 5.3), which becomes
// readable when it exits; without one, by its pid changing (checked every
// kCheckS). A shim with no launcher (started from a shell) has no lifeline:
// `nohup aml-shim ... &` survives the shell.
#pragma once

#include <sys/types.h>

#include <string>

namespace aml {

class Lifeline {
 public:
  static constexpr double kCheckS = 1.0;

  Lifeline() = default;
  Lifeline(const Lifeline&) = delete;
  Lifeline& operator=(const Lifeline&) = delete;
  ~Lifeline();

  // Watches this process's parent; nothing when it is init (pid 1: a
  // container's launcher, which takes the namespace with it).
  void WatchParent();
  bool watching() const { return parent_ > 0; }
  // A descriptor that becomes readable when the parent exits (-1: none;
  // then CheckGone at least every kCheckS).
  int fd() const { return fd_; }
  // True once the parent is gone (exited, or this process was reparented).
  bool CheckGone() const;
  // "the launcher (mpirun, pid 4711) is gone"
  std::string What() const;

 private:
  pid_t parent_ = -1;
  std::string name_;
  int fd_ = -1;
};

}  // namespace aml
