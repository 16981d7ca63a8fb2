#include "launch/exec.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include "shim/base/fd_limit.h"

namespace aml {

CArgs::CArgs(const std::vector<std::string>& strings) : storage(strings) {
  ptrs.reserve(storage.size() + 1);
  for (auto& s : storage) ptrs.push_back(s.data());
  ptrs.push_back(nullptr);
}

int ExecFailureCode(int err, const std::string& command, std::string* message) {
  if (err == ENOENT || err == ENOTDIR) {
    *message = "'" + command + "': command not found";
    return kExitNotFound;
  }
  *message = "'" + command + "': cannot execute: " + std::strerror(err);
  return kExitNotExecutable;
}

int ExecCommand(const std::vector<std::string>& argv, const EnvSnapshot& env,
                std::string* message) {
  CArgs args(argv);
  CArgs envp(env.ToStrings());
  // execvpe searches the PATH of *this* process, which is the user's. The
  // command gets the file limit aml-shim was started with.
  OriginalFdLimit limit;
  execvpe(args.ptrs[0], args.data(), envp.data());
  return ExecFailureCode(errno, argv[0], message);
}

}  // namespace aml
