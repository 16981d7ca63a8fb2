// The options aml-shim takes: their descriptions (Boost.Program_options), their
// AML_SHIM_<NAME> twins and the subcommands each applies to, one table for
// the parser (options.cc), --help and the checks that every option has a row.
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "shim/cli/options.h"

namespace aml {
namespace cli {

namespace po = boost::program_options;

// Every option: run takes all; env takes the world options plus
// --json/--explain; probe takes --json and --sysfs-root.
po::options_description Describe();

// An option that takes no value (a flag: --retire-slow).
bool IsFlag(const po::options_description& d, const std::string& name);

// The variable that sets `option` ("grace": AML_SHIM_GRACE).
std::string EnvName(const std::string& option);

// Which subcommands each option applies to, and whether AML_SHIM_<NAME> may
// set it (help/version/json/explain are about this invocation's output).
// Every option of Describe() has a row (OptionsWithoutScope() checks).
enum Scope : unsigned { kRun = 1, kEnv = 2, kProbe = 4, kAll = kRun | kEnv | kProbe };
struct OptionRule {
  const char* name;
  bool env_twin;
  unsigned scope;
};
const std::vector<OptionRule>& OptionRules();
const OptionRule* FindRule(const std::string& name);

// The subcommand's bit among Scope's, and its name in messages.
unsigned ScopeOf(Subcommand s);
const char* Where(Subcommand s);

}  // namespace cli
}  // namespace aml
