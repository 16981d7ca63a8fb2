#include "launch/cpu_affinity.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace aml {

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> UsableCpus(const std::vector<int>& wanted, const std::vector<int>& allowed) {
  std::vector<int> out;
  for (int c : wanted)
    if (std::binary_search(allowed.begin(), allowed.end(), c)) out.push_back(c);
  return out;
}

Status BindToCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    return Error{std::string("sched_setaffinity: ") + std::strerror(errno)};
  return Ok{};
}

ScopedCpuBinding::ScopedCpuBinding(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  CPU_ZERO(&saved_);
  if (sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
  active_ = BindToCpus(cpus).ok();
}

ScopedCpuBinding::~ScopedCpuBinding() {
  if (active_) sched_setaffinity(0, sizeof saved_, &saved_);
}

}  // namespace aml
