// The two clocks aml-shim reads, as seconds in a double: the monotonic one
// for every deadline and interval (the supervisor's loop, the keeper, the
// control plane), the wall clock for what is compared across nodes or shown
// to users (when a rank failed).
#pragma once

namespace aml {

double MonotonicSeconds();  // CLOCK_MONOTONIC
double WallSeconds();       // CLOCK_REALTIME

// A loop that finds more than this between two of its own steps (a wait
// that overran its timeout, a read and the timers that follow it) was
// stopped or descheduled in between (SIGSTOP, a frozen node, a busy
// machine): what it saw before is stale, and it looks again before it
// judges anyone silent (docs/control-plane.md, "A new root": an old root that
// wakes).
constexpr double kDescheduledS = 1;

}  // namespace aml
