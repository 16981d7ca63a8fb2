// A copy of the process environment taken once at start. All logic reads the
// environment through this object so that every rule is testable with a map.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace aml {

class EnvSnapshot {
 public:
  EnvSnapshot() = default;
  explicit EnvSnapshot(std::map<std::string, std::string> vars)
      : vars_(vars.begin(), vars.end()) {}

  // Copies `envp` (a NULL-terminated "NAME=VALUE" array such as environ).
  static EnvSnapshot FromEnvp(const char* const* envp);

  // The value of `name`, or nullptr when it is not set.
  const std::string* Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // Set and not empty.
  bool HasNonEmpty(std::string_view name) const;
  std::string GetOr(std::string_view name, std::string fallback) const;

  const std::map<std::string, std::string, std::less<>>& vars() const {
    return vars_;
  }
  void Set(std::string name, std::string value) {
    vars_[std::move(name)] = std::move(value);
  }
  void Unset(std::string_view name) {
    auto it = vars_.find(name);
    if (it != vars_.end()) vars_.erase(it);
  }

 private:
  std::map<std::string, std::string, std::less<>> vars_;
};

}  // namespace aml
