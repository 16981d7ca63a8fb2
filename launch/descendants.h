// Processes reparented to aml-shim (it is a child subreaper, or PID 1):
// orphaned grandchildren that left their rank's process group.
#pragma once

#include <sys/types.h>

#include <vector>

namespace aml {

// Direct children of this process, from /proc, but those in `except` (the
// keeper, --warm-restart's standbys).
std::vector<pid_t> ListChildren(const std::vector<pid_t>& except = {});
bool HasDescendants(const std::vector<pid_t>& except = {});
// Sends `sig` to every direct child's process group and to the child itself.
// A direct child cannot be reaped behind our back, so its pid and group id
// are its own while we signal them. False when there was none.
bool SignalDescendants(int sig, const std::vector<pid_t>& except = {});

}  // namespace aml
