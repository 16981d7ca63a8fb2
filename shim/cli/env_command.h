// `aml-shim env`: what the command would get, for this rank.
#pragma once

#include <string>
#include <vector>

#include "shim/plan/child_plan.h"
#include "shim/cli/options.h"
#include "shim/world/world.h"

namespace aml {

// Shell `export` lines, JSON, or the --explain table.
std::string FormatEnv(const World& world, const std::vector<ChildPlan>& plans,
                      const Options& options);

// `value` quoted for a POSIX shell when it needs it.
std::string ShellQuote(const std::string& value);

}  // namespace aml
