// --warm-restart (docs/control-plane.md, "Warm restarts"): one standby
// interpreter per child slot, started a while after each attempt's ranks
// (kAfterS: not beside their own start-up), which imports --preload's
// modules and waits; at the next restart it becomes the slot's rank (its
// order: launch/warm_order.h). Each is the command's own interpreter with
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
  static constexpr double kAfterS = 10;  // after the attempt's ranks started
  // How long after the rank's start its standby waits for the rank's
  // modules (written by aml-shim's agent once its process group is up)
  // before it is made with --preload's alone.
  static constexpr double kLearnS = 60;

  // `dir`: the shim's private directory (warm_standby.py is written there
  // at the first standby); `modules`: --preload's list.
  void Configure(std::string dir, std::string modules, bool pipe_output);
  bool on() const { return !dir_.empty(); }

  // Where rank R's agent writes the modules it imported: this + R (the
  // variable AML_SHIM_LEARN_MODULES of every rank).
  std::string LearnPrefix() const { return WarmLearnPrefix(dir_); }

  // Slot `i`'s rank `rank` started at `now` with this command, environment
  // and CPUs: its standby is due kAfterS later, once the rank's modules are
  // known (an earlier attempt's rank `rank` counts), or kLearnS after its
  // start without them (a command that is not a Python script or module
  // never has one: said once). A spare's slot (`rank` -1: no rank ran
  // there) has --preload's modules alone, kAfterS after `now`.
  void Due(size_t i, int rank, const std::vector<std::string>& argv, const EnvSnapshot* env,
           const EnvSets& sets, const std::vector<int>& cpus, double now);
  // Starts the standbys that are due; their pids, to name to the keeper.
  std::vector<pid_t> Poll(double now);
  double NextDeadline() const;  // the next due time (infinity: none)

  // At a restart: slot `i`'s standby told to run `argv` in the environment
  // `env` with `sets` (the new attempt's), as a started child; nothing when
  // it has none or it died (`*why`: the cold start's reason).
  std::optional<SpawnedChild> Take(size_t i, const std::vector<std::string>& argv,
                                   const EnvSnapshot& env, const EnvSets& sets, std::string* why);
  // A reaped pid: true when it was a standby (its slot then has none).
  bool Reaped(pid_t pid, int status);
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
    double due = -1;  // when one is to be started (-1: none due)
    double learn_until = -1;  // made without the rank's modules from then
    int rank = -1;
    PythonCommand command;  // the rank's, parsed
    const EnvSnapshot* env = nullptr;
    EnvSets sets;
    std::vector<int> cpus;
    std::string died;  // why its last standby is gone ("": none died)
  };
  void Drop(Slot& s, bool kill_group);
  std::string Start(Slot& s);
  std::string Learned(const Slot& s) const;  // its rank's modules' file ("": none yet)
  Status WriteScript();

  std::string dir_, modules_, script_;
  bool pipe_output_ = true;
  bool said_cold_ = false;
  std::vector<Slot> slots_;
  std::vector<pid_t> killed_;  // killed, not reaped yet
};

}  // namespace aml
