// The program: parse, resolve, then print (env/probe), exec or supervise.
#pragma once

#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"

namespace aml {

int Main(const std::vector<std::string>& args, const EnvSnapshot& env);

}  // namespace aml
