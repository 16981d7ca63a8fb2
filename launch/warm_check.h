// --warm-restart's check before anything runs (docs/control-plane.md, "Warm
// restarts"): the rank's own interpreter, with its own flags and in the
// rank's environment, finds each --preload module (its top-level package:
// importlib.util.find_spec, which imports nothing of torch). A module it
// cannot find, or an interpreter that cannot start, is a standby that could
// not be made: aml-shim refuses with 125 and nothing runs. A command that is
// not a Python script or module is not checked (its restarts start cold,
// said once).
#pragma once

#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

constexpr double kWarmCheckS = 30;  // the interpreter's start on a busy node

// The error names the module or the interpreter and why.
Status CheckWarmPreload(const std::vector<std::string>& argv, const EnvSnapshot& env,
                        const std::string& modules, double within_s = kWarmCheckS);

}  // namespace aml
