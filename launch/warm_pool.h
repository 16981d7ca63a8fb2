// --warm-restart (docs/control-plane.md, "Warm restarts"): the standby
// interpreters as processes, one per child slot, made when the node's
// machine says (launch/warm_slots.h: as each attempt's ranks start), which
// import --preload's modules and the rank's own (as soon as its agent
// wrote them), and wait in the idle scheduling class; at
// the next restart one becomes the slot's rank (its order:
// launch/warm_order.h). Each is the command's own interpreter with
// its own flags, a fresh process (never a fork of a rank), in a process
// group of its own, named to the keeper, given the rank's environment of
// the attempt it was started in; nothing of the ended attempt reaches it
// but that. A slot without one (its standby died, or a restart came before
// it was made) starts cold, and the line says why.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/child.h"
#include "launch/exec.h"
#include "launch/flight/fr_env.h"
#include "launch/warm_command.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

class WarmPool {
 public:
  // `dir`: the shim's private directory (warm_standby.py is written there
  // at the first standby); `modules`: --preload's list; `idle`: each standby
  // waits in the idle scheduling class, and leaves it at its order
  // (launch/idle_class.h).
  void Configure(std::string dir, std::string modules, bool pipe_output, bool idle);
  bool on() const { return !dir_.empty(); }

  // Where rank R's agent writes the modules it imported: this + R (the
  // variable AML_SHIM_LEARN_MODULES of every rank).
  std::string LearnPrefix() const { return WarmLearnPrefix(dir_); }

  // What slot `i`'s next standby is made from: its rank `rank` (-1: a
  // spare's slot, no rank ran there), command, environment and CPUs (a
  // command that is not a Python script or module never has one: said once).
  void Set(size_t i, int rank, const std::vector<std::string>& argv, const EnvSnapshot* env,
           const EnvSets& sets, const std::vector<int>& cpus);
  // Makes slot i's standby: "" (its pid in `*pid`, to name to the keeper),
  // or why not.
  std::string Make(size_t i, pid_t* pid);

  // At a restart: slot `i`'s standby told to run `argv` in the environment
  // `env` with `sets` (the new attempt's), as a started child; nothing when
  // it did not take the order (`*why`; it was ended).
  std::optional<SpawnedChild> Take(size_t i, const std::vector<std::string>& argv,
                                   const EnvSnapshot& env, const EnvSets& sets, std::string* why);
  void End(size_t i);  // its group killed
  // A reaped pid: true when it was a standby; `*slot` and `*why` when it was
  // a live one that ended by itself (not one ended here).
  bool Reaped(pid_t pid, int status, std::optional<size_t>* slot, std::string* why);
  // The job ends: every standby is killed (its group) and forgotten.
  void EndAll();
  // Every standby's pid, and those killed and not reaped yet: the shim's,
  // not an attempt's stragglers.
  std::vector<pid_t> pids() const;
  // Each live standby's slot (the node's local rank) and resident memory in
  // bytes (/proc/PID/statm).
  std::vector<std::pair<int, double>> Resident() const;

 private:
  struct Slot {
    pid_t pid = -1;
    int order_fd = -1;  // the write end of its order's pipe
    int out_fd = -1, err_fd = -1;
    int rank = -1;
    Result<PythonCommand> command = Error{""};  // the rank's, parsed
    const EnvSnapshot* env = nullptr;
    EnvSets sets;
    std::vector<int> cpus;
  };
  void Drop(Slot& s, bool kill_group);
  std::string LearnedPath(const Slot& s) const;  // its rank's modules' file ("": a spare's)
  Status WriteScript();

  std::string dir_, modules_, script_;
  bool pipe_output_ = true;
  bool idle_ = false;
  bool said_cold_ = false;
  std::vector<Slot> slots_;
  std::vector<pid_t> killed_;  // killed, not reaped yet
};

}  // namespace aml
