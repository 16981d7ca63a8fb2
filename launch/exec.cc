#include "launch/exec.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include "shim/base/fd_limit.h"

namespace aml {

CArgs::CArgs(const std::vector<std::string>& strings) {
  size_t bytes = 0;
  for (const std::string& s : strings) bytes += s.size() + 1;
  buffer_.resize(bytes);
  std::vector<size_t> starts;
  starts.reserve(strings.size());
  char* at = buffer_.data();
  for (const std::string& s : strings) {
    starts.push_back(static_cast<size_t>(at - buffer_.data()));
    std::memcpy(at, s.c_str(), s.size() + 1);
    at += s.size() + 1;
  }
  Point(starts);
}

CArgs::CArgs(const EnvSnapshot& env, const EnvSets& sets) {
  // The last set of a name wins; the rest merge into the sorted map.
  std::vector<const std::pair<std::string, std::string>*> set;
  for (auto it = sets.rbegin(); it != sets.rend(); ++it) {
    bool seen = false;
    for (const auto* s : set) seen = seen || s->first == it->first;
    if (!seen) set.push_back(&*it);
  }
  std::sort(set.begin(), set.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  size_t bytes = 0;
  for (const auto& [k, v] : env.vars()) bytes += k.size() + v.size() + 2;
  for (const auto* s : set) bytes += s->first.size() + s->second.size() + 2;
  buffer_.resize(bytes);  // at least what is written: a set replaces a value
  std::vector<size_t> starts;
  starts.reserve(env.vars().size() + set.size());
  char* at = buffer_.data();
  auto add = [&](const std::string& k, const std::string& v) {
    starts.push_back(static_cast<size_t>(at - buffer_.data()));
    std::memcpy(at, k.data(), k.size());
    at[k.size()] = '=';
    std::memcpy(at + k.size() + 1, v.c_str(), v.size() + 1);
    at += k.size() + v.size() + 2;
  };
  // A set to EnvRemoved() takes the name away.
  auto put = [&](const std::pair<std::string, std::string>* s) {
    if (s->second != EnvRemoved()) add(s->first, s->second);
  };
  size_t next = 0;
  for (const auto& [k, v] : env.vars()) {
    for (; next < set.size() && set[next]->first < k; ++next) put(set[next]);
    if (next < set.size() && set[next]->first == k) put(set[next++]);
    else add(k, v);
  }
  for (; next < set.size(); ++next) put(set[next]);
  Point(starts);
}

void CArgs::Point(const std::vector<size_t>& starts) {
  ptrs_.reserve(starts.size() + 1);
  for (size_t start : starts) ptrs_.push_back(&buffer_[start]);
  ptrs_.push_back(nullptr);
}

int ExecFailureCode(int err, const std::string& command, std::string* message) {
  if (err == ENOENT || err == ENOTDIR) {
    *message = "'" + command + "': command not found";
    return kExitNotFound;
  }
  *message = "'" + command + "': cannot execute: " + std::strerror(err);
  return kExitNotExecutable;
}

int ExecCommand(const std::vector<std::string>& argv, const EnvSnapshot& env,
                const EnvSets& sets, std::string* message) {
  CArgs args(argv);
  CArgs envp(env, sets);
  // execvpe searches the PATH of *this* process, which is the user's. The
  // command gets the file limit aml-shim was started with.
  OriginalFdLimit limit;
  execvpe(args.first(), args.data(), envp.data());
  return ExecFailureCode(errno, argv[0], message);
}

}  // namespace aml
