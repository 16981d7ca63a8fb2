// When a process started, read async-signal-safely (the keeper uses it after
// fork): a process younger than the keeper can only have been started by the
// shim's job, never a process that was there before.
#pragma once

#include <sys/types.h>

namespace aml {

// A process's start time (clock ticks after boot, /proc/PID/stat field 22),
// or -1.
long long StartTicks(pid_t pid);
// `pgid` may be a group the keeper ends: never 0, 1 or -1 (kill(-1) is every
// process of the user), and its leader started at `since` or later (-1:
// unknown, no /proc). A leader reparented after the shim died still counts.
bool StartedSince(pid_t pgid, long long since);

// "/proc/<pid>/<leaf>" into `out` (at least 64 bytes), without allocating.
void ProcPath(pid_t pid, const char* leaf, char* out);

}  // namespace aml
