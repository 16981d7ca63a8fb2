// CPU affinity for --numa-bind. A child started with vfork and exec inherits the
// spawning thread's mask, so the supervisor sets the child's CPUs around the
// spawn and restores its own afterwards; exec mode sets them before exec.
#pragma once

#include <sched.h>

#include <vector>

#include "shim/base/result.h"

namespace aml {

// The CPUs this thread may run on now.
std::vector<int> AllowedCpus();

// `wanted` limited to what this process may use (a container's cpuset):
// an empty answer means no overlap, so nothing should be bound.
std::vector<int> UsableCpus(const std::vector<int>& wanted, const std::vector<int>& allowed);

// Binds the calling thread (and what it spawns or execs) to `cpus`.
Status BindToCpus(const std::vector<int>& cpus);

// Binds for its lifetime, then restores the previous mask.
class ScopedCpuBinding {
 public:
  explicit ScopedCpuBinding(const std::vector<int>& cpus);
  ~ScopedCpuBinding();
  ScopedCpuBinding(const ScopedCpuBinding&) = delete;
  ScopedCpuBinding& operator=(const ScopedCpuBinding&) = delete;

 private:
  bool active_ = false;
  cpu_set_t saved_{};
};

}  // namespace aml
