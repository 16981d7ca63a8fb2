// execvpe with the exit codes of env(1): 127 not found, 126 not executable.
#pragma once

#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/exit_code.h"

namespace aml {

// Replaces this process with `argv` in environment `env`. Returns only on
// failure, with the exit code to use; `message` then says why.
int ExecCommand(const std::vector<std::string>& argv, const EnvSnapshot& env,
                std::string* message);

// The exit code and message for an exec failure with errno `err`.
int ExecFailureCode(int err, const std::string& command, std::string* message);

// Holds argv/envp as C arrays for exec.
struct CArgs {
  explicit CArgs(const std::vector<std::string>& strings);
  char* const* data() { return ptrs.data(); }
  std::vector<std::string> storage;
  std::vector<char*> ptrs;
};

}  // namespace aml
