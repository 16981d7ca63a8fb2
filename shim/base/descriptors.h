// The descriptors a loaded library opens for itself (libpmix's connection
// to its server, its shared-memory files) without close-on-exec: marked
// close-on-exec, so that the commands aml-shim starts do not inherit them.
#pragma once

#include <vector>

namespace aml {

// This process's open descriptors, ascending (from /proc/self/fd).
std::vector<int> OpenDescriptors();

// Sets FD_CLOEXEC on every open descriptor not in `before` (ascending, as
// OpenDescriptors gives it); returns how many it marked.
int CloseOnExecSince(const std::vector<int>& before);

}  // namespace aml
