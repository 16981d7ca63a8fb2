// Starts one child with posix_spawn in a process group of its own, with
// default signal dispositions and an empty signal mask, its stdout/stderr
// either inherited or sent to pipes that the supervisor reads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "shim/env_snapshot.h"
#include "shim/result.h"

namespace aml {

struct SpawnedChild {
  pid_t pid = -1;  // also its process group id
  int out_fd = -1;  // read end of its stdout pipe (non-blocking), or -1
  int err_fd = -1;  // read end of its stderr pipe (non-blocking), or -1
};

struct SpawnError {
  int exit_code;  // 126 or 127, as env(1)
  std::string message;
};

// On failure returns the error with the exit code to use.
Result<SpawnedChild> SpawnChild(const std::vector<std::string>& argv,
                                const EnvSnapshot& env, bool pipe_output,
                                int* failure_exit_code);

}  // namespace aml
