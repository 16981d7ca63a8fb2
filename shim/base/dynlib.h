// The one way aml-shim loads a library of the cluster (libmpi, libpmix,
// libibverbs, the CUDA runtime, NCCL): at run time with dlopen, never linked,
// as NCCL's own ibvsymbols.cc loads libibverbs. One rule for every library:
//   - AML_SHIM_LIB<NAME>, when set, is the only file tried (never a silent
//     fallback); set but empty, or a path that cannot be read, is an error
//     before anything runs (CheckLibraryOverride);
//   - else the spec's candidates, in order, the first that dlopen accepts;
//   - its symbols are bound all or nothing (a table), and what is missing is
//     named in one message: "<file> is not <what>: it lacks a, b".
// A loaded library stays loaded: its plugins may still be mapped.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

struct LibrarySpec {
  std::string what;          // "libpmix (the PMIx client)", for messages
  std::string override_var;  // "AML_SHIM_LIBPMIX"
  std::vector<std::string> candidates;  // tried in order when the variable is unset
  std::string hint;          // said after "not found (...)"; may be empty
  bool global = false;       // RTLD_GLOBAL (Open MPI's plugins need libmpi's symbols)
};

// One entry of a symbol table: its name and where its address goes.
struct Symbol {
  const char* name;
  std::function<void(void*)> set;
};
template <class F>
Symbol Sym(const char* name, F* fn) {
  return Symbol{name, [fn](void* p) { *fn = reinterpret_cast<F>(p); }};
}

class Library {
 public:
  Library(void* handle, std::string file, std::string what)
      : handle_(handle), file_(std::move(file)), what_(std::move(what)) {}
  // Every symbol of the table, or an error naming all that are missing (and
  // none is set).
  Status Bind(const std::vector<Symbol>& table) const;
  // One symbol, or nullptr: for telling ABIs apart.
  void* Find(const char* name) const;
  const std::string& file() const { return file_; }

 private:
  void* handle_;
  std::string file_;
  std::string what_;
};

// The files OpenLibrary tries, in order.
std::vector<std::string> LibraryCandidates(const LibrarySpec& spec, const EnvSnapshot& env);

// The first candidate dlopen accepts, or an error that says what was tried
// and what to set.
Result<Library> OpenLibrary(const LibrarySpec& spec, const EnvSnapshot& env);

// `var` set but empty, or naming a path that cannot be read: an error naming
// it, checked at start whether or not the library is needed this time.
Status CheckLibraryOverride(const EnvSnapshot& env, const std::string& var);

}  // namespace aml
