// --warm-restart (docs/control-plane.md, "Warm restarts"): whether a rank's
// command can start from a standby interpreter, and how. A standby is the
// command's own interpreter with its own flags, started on aml-shim's
// warm_standby.py instead of the script; at a restart it is told the script (or
// module), its arguments, the working directory and the attempt's whole
// environment, and runs it as the interpreter would have.
#pragma once

#include <string>
#include <vector>

#include "shim/base/result.h"

namespace aml {

struct PythonCommand {
  std::string interpreter;         // argv[0] as given
  std::vector<std::string> flags;  // the interpreter's own options, as given
  bool module = false;             // -m MODULE
  std::string target;              // the script's path, or the module's name
  std::vector<std::string> args;   // what follows the script or module
  // sys.argv as the interpreter would set it (the script's path, or for -m
  // the module's file, which runpy fills in: "-m" until then).
  std::vector<std::string> SysArgv() const;
  // The standby's command: the interpreter, its flags, `standby_py`.
  std::vector<std::string> StandbyArgv(const std::string& standby_py) const;
};

// `argv` as a Python interpreter running a script or a module, or why it
// must start cold (the error's message, one line: "not a Python
// interpreter: bash", "-c runs a string: cold", ...).
Result<PythonCommand> ParsePythonCommand(const std::vector<std::string>& argv);

}  // namespace aml
