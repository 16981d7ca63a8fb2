// The one place aml-shim starts a process: vfork and exec (as posix_spawn
// does, without its 128 sigaction calls per child), with default signal
// dispositions and an empty signal mask, optionally in a process group of its
// own, with stdout/stderr inherited, sent to pipes the caller reads, or
// stdout folded into stderr, and one extra descriptor passed at a fixed number.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/exec.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

// How to start a command (its argv and environment are Spawn's arguments).
struct SpawnSpec {
  EnvSets env_sets;               // set over the environment for this child
  bool search_path = true;        // argv[0] looked up in PATH (execvpe)
  bool own_process_group = true;  // its pid is also its process group id
  bool pipe_output = false;       // stdout/stderr to non-blocking pipes
  bool stdout_to_stderr = false;  // its stdout is the caller's stderr
  bool stdin_null = false;        // its stdin is /dev/null, not the caller's
  int pass_fd = -1;               // dup'ed to pass_as in the child
  int pass_as = -1;
  bool idle_class = false;        // it starts in the idle CPU and I/O classes (idle_class.h)
};

struct SpawnedChild {
  pid_t pid = -1;
  int out_fd = -1;  // read end of its stdout pipe (non-blocking), or -1
  int err_fd = -1;  // read end of its stderr pipe (non-blocking), or -1
};

// Where execvp would find `name`: itself when it has a '/', else the first
// executable file of that name in this process's PATH ("" when none).
std::string FoundOnPath(const std::string& name);

// On failure returns the error, with `*failure_exit_code` set to the exit
// code to use (126/127 as env(1), else 125).
Result<SpawnedChild> Spawn(const std::vector<std::string>& argv, const EnvSnapshot& env,
                           const SpawnSpec& spec, int* failure_exit_code);

// A child of the supervisor: PATH lookup, its own process group, `sets`
// over `env`.
Result<SpawnedChild> SpawnChild(const std::vector<std::string>& argv, const EnvSnapshot& env,
                                const EnvSets& sets, bool pipe_output, int* failure_exit_code);

}  // namespace aml
