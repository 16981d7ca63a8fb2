// Processes found by a tag in their environment: what a SIGKILLed shim's
// keeper ends besides the process groups it was told of. A child being
// spawned when the shim died was never named to the keeper, and descendants
// that left their rank's group (setsid, setpgid, Python's
// start_new_session=True) are in no group the keeper knows; both inherited
// the tag (docs/supervision.md, "Per-node launch and supervision"). As Jenkins's
// process-tree killer does with its cookie, the keeper scans /proc for it.
//
// Async-signal-safe and allocation-free: the keeper is forked from a shim
// that may have threads (a dlopen'ed MPI).
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace aml {

// The variable that carries the tags: the shim's own, after those of any
// shim above it ("outer:inner"), so an outer keeper also finds what an inner
// shim started.
constexpr char kKeeperTagVar[] = "AML_SHIM_KEEPER_TAG";

// Whether the bytes read from `fd` (a /proc/PID/environ) contain `tag`
// (`len` bytes, none of them NUL), wherever it is.
bool StreamHas(int fd, const char* tag, size_t len);

// Sends `sig` (0: only counts) to every process but `skip` whose environment
// holds `tag` and that started at `since` (StartTicks) or later; returns how
// many were found. Where the kernel has pidfds, a process is signalled
// through the pidfd opened before its environment was read, so a pid that
// was recycled in between is never hit.
int SignalTagged(const char* tag, size_t len, long long since, int sig, pid_t skip);

}  // namespace aml
