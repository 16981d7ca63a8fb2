// Processes reparented to aml-shim (it is a child subreaper, or PID 1):
// orphaned grandchildren that left their rank's process group.
#pragma once

#include <sys/types.h>

#include <vector>

namespace aml {

// Direct children of this process, from /proc.
std::vector<pid_t> ListChildren();
bool HasDescendants();
// Sends `sig` to every direct child's process group and to the child itself.
void SignalDescendants(int sig);

}  // namespace aml
