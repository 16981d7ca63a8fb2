#include "shim/base/env_snapshot.h"

#include <cstring>

namespace aml {

EnvSnapshot EnvSnapshot::FromEnvp(const char* const* envp) {
  EnvSnapshot snap;
  for (; envp && *envp; ++envp) {
    const char* eq = std::strchr(*envp, '=');
    if (!eq) continue;
    // The first definition wins, as getenv() does.
    snap.vars_.emplace(std::string(*envp, eq), std::string(eq + 1));
  }
  return snap;
}

const std::string* EnvSnapshot::Find(std::string_view name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : &it->second;
}

bool EnvSnapshot::HasNonEmpty(std::string_view name) const {
  const std::string* v = Find(name);
  return v && !v->empty();
}

std::string EnvSnapshot::GetOr(std::string_view name,
                               std::string fallback) const {
  const std::string* v = Find(name);
  return v ? *v : std::move(fallback);
}

}  // namespace aml
