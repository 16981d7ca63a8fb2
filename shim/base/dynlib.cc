#include "shim/base/dynlib.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aml {

Status Library::Bind(const std::vector<Symbol>& table) const {
  std::vector<void*> found;
  std::string missing;
  for (const Symbol& s : table) {
    found.push_back(dlsym(handle_, s.name));
    if (!found.back()) missing += (missing.empty() ? "" : ", ") + std::string(s.name);
  }
  if (!missing.empty()) return Error{file_ + " is not " + what_ + ": it lacks " + missing};
  for (size_t i = 0; i < table.size(); ++i) table[i].set(found[i]);
  return Ok{};
}

void* Library::Find(const char* name) const { return dlsym(handle_, name); }

std::vector<std::string> LibraryCandidates(const LibrarySpec& spec, const EnvSnapshot& env) {
  if (env.HasNonEmpty(spec.override_var)) return {*env.Find(spec.override_var)};
  return spec.candidates;
}

Result<Library> OpenLibrary(const LibrarySpec& spec, const EnvSnapshot& env) {
  std::string tried;
  for (const std::string& name : LibraryCandidates(spec, env)) {
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | (spec.global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (handle) return Library(handle, name, spec.what);
    const char* err = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(err ? err : name);
  }
  if (env.HasNonEmpty(spec.override_var))
    return Error{spec.override_var + "='" + *env.Find(spec.override_var) +
                 "' cannot be loaded: " + tried};
  return Error{spec.what + " was not found (" + tried + "); set " + spec.override_var +
               " to its path" + (spec.hint.empty() ? "" : ", " + spec.hint)};
}

Status CheckLibraryOverride(const EnvSnapshot& env, const std::string& var) {
  const std::string* lib = env.Find(var);
  if (!lib) return Ok{};
  if (lib->empty()) return Error{var + " is set but empty: unset it, or name the library's file"};
  // A bare name is looked up by the dynamic loader when it is needed.
  if (lib->find('/') != std::string::npos && access(lib->c_str(), R_OK) != 0)
    return Error{var + "='" + *lib + "': " + std::strerror(errno)};
  return Ok{};
}

}  // namespace aml
