// aml-shim's own file limit (docs/preflight.md, "TCP preflight: limits and strangers"): rank 0 of a large
// job holds one connection per rank, so at start the soft RLIMIT_NOFILE is
// raised to the hard limit; the command gets the limits aml-shim was started
// with (restored around every exec and spawn).
#pragma once

#include <sys/resource.h>

namespace aml {

// Raises the soft limit to the hard one; remembers the original.
void RaiseFdLimit();
// The soft limit in force now.
rlim_t FdLimit();

// While alive, the original limits are in force (for a child to inherit).
class OriginalFdLimit {
 public:
  OriginalFdLimit();
  ~OriginalFdLimit();
  OriginalFdLimit(const OriginalFdLimit&) = delete;
  OriginalFdLimit& operator=(const OriginalFdLimit&) = delete;

 private:
  bool lowered_ = false;
};

}  // namespace aml
