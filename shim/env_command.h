// `aml-shim env`: what the command would get, for this rank.
#pragma once

#include <string>
#include <vector>

#include "shim/contract.h"
#include "shim/options.h"
#include "shim/world.h"

namespace aml {

// One entry per child this shim would start.
struct ChildPlan {
  std::vector<EnvVar> vars;
  std::vector<std::string> argv;
};

// Shell `export` lines, JSON, or the --explain table.
std::string FormatEnv(const World& world, const std::vector<ChildPlan>& plans,
                      const Options& options);

// `value` quoted for a POSIX shell when it needs it.
std::string ShellQuote(const std::string& value);

}  // namespace aml
