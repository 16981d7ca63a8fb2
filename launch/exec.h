// execvpe with the exit codes of env(1): 127 not found, 126 not executable.
#pragma once

#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/env_var.h"
#include "shim/base/exit_code.h"

namespace aml {

// Replaces this process with `argv` in environment `env` with `sets`
// applied. Returns only on failure, with the exit code to use; `message`
// then says why.
int ExecCommand(const std::vector<std::string>& argv, const EnvSnapshot& env,
                const EnvSets& sets, std::string* message);

// The exit code and message for an exec failure with errno `err`.
int ExecFailureCode(int err, const std::string& command, std::string* message);

// Holds argv/envp as C arrays for exec, in one buffer (two allocations,
// whatever the count: a child's 60 variables were 240 before).
class CArgs {
 public:
  explicit CArgs(const std::vector<std::string>& strings);
  // "NAME=VALUE" for each variable of `env` with `sets` applied, in name order.
  CArgs(const EnvSnapshot& env, const EnvSets& sets);
  char* const* data() { return ptrs_.data(); }
  const char* first() const { return ptrs_[0]; }

 private:
  void Point(const std::vector<size_t>& starts);
  std::string buffer_;
  std::vector<char*> ptrs_;
};
}  // namespace aml
