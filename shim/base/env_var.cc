#include "shim/base/env_var.h"

namespace aml {

void ContractBuilder::Force(const std::string& name, const std::string& value,
                            const std::string& why) {
  vars_.push_back({name, value, why, false});
}

void ContractBuilder::Default(const std::string& name, const std::string& value,
                              const std::string& why) {
  if (const std::string* user = env_.Find(name)) {
    vars_.push_back({name, *user, "set by the user (aml-shim would write '" +
                                      value + "': " + why + ")",
                     true});
    return;
  }
  vars_.push_back({name, value, why, false});
}

void ContractBuilder::Remove(const std::string& name, const std::string& why) {
  if (env_.Has(name)) vars_.push_back({name, "", why, false, true});
}

const std::string& EnvRemoved() {
  static const std::string removed(1, '\0');
  return removed;
}

EnvSets ContractSets(const std::vector<EnvVar>& vars) {
  EnvSets sets;
  for (const EnvVar& v : vars)
    if (!v.user_kept) sets.emplace_back(v.name, v.removed ? EnvRemoved() : v.value);
  return sets;
}

EnvSnapshot ApplyContract(const EnvSnapshot& env,
                          const std::vector<EnvVar>& vars) {
  EnvSnapshot out = env;
  for (auto& [name, value] : ContractSets(vars)) {
    if (value == EnvRemoved()) out.Unset(name);
    else out.Set(std::move(name), std::move(value));
  }
  return out;
}

std::string ValueOf(const std::vector<EnvVar>& vars, const std::string& name) {
  for (const EnvVar& v : vars)
    if (v.name == name) return v.value;
  return "";
}

}  // namespace aml
