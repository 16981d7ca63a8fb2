// One variable aml-shim assigns to a child, with its reason, and the rule
// every layer uses to assign them: Force() always writes, Default() writes
// only where the user left the variable unset (the user's value is kept and
// the reason says what aml-shim would have written), Remove() takes a
// variable away (--node-launcher: nothing per process).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shim/base/env_snapshot.h"

namespace aml {

struct EnvVar {
  std::string name;
  std::string value;
  std::string why;
  bool user_kept = false;  // the user's own value was kept (value is theirs)
  bool removed = false;    // taken away from the child's environment
};

class ContractBuilder {
 public:
  explicit ContractBuilder(const EnvSnapshot& env) : env_(env) {}
  void Force(const std::string& name, const std::string& value,
             const std::string& why);
  void Default(const std::string& name, const std::string& value,
               const std::string& why);
  // Only when the environment has it (nothing to say otherwise).
  void Remove(const std::string& name, const std::string& why);
  const std::vector<EnvVar>& vars() const { return vars_; }

 private:
  const EnvSnapshot& env_;
  std::vector<EnvVar> vars_;
};

// Names set over an environment for one process: (name, value), later ones
// winning over earlier ones of the same name; the value EnvRemoved() (a NUL,
// which no environment value can hold) takes the name away.
using EnvSets = std::vector<std::pair<std::string, std::string>>;
const std::string& EnvRemoved();

// The assignments `vars` make (user-kept ones change nothing).
EnvSets ContractSets(const std::vector<EnvVar>& vars);

// `env` with the assignments applied.
EnvSnapshot ApplyContract(const EnvSnapshot& env,
                          const std::vector<EnvVar>& vars);

// The value assigned to `name`, or "" when absent.
std::string ValueOf(const std::vector<EnvVar>& vars, const std::string& name);

}  // namespace aml
