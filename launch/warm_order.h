// --warm-restart: the order a standby interpreter (warm_standby.py) takes at a
// restart, as bytes: NUL-separated fields, every string as it is (file names,
// arguments and variables need not be UTF-8). "aml-standby-1", the working
// directory, "script" or "module", the script's path or the module's name,
// sys.argv's count and items, the environment's count and NAME=VALUE items.
#pragma once

#include <string>
#include <vector>

#include "launch/warm_command.h"

namespace aml {

struct WarmOrder {
  std::string cwd;
  PythonCommand command;
  std::vector<std::string> env;  // NAME=VALUE, the attempt's whole environment
};

std::string EncodeWarmOrder(const WarmOrder& order);

}  // namespace aml
