// The two clocks aml-shim reads, as seconds in a double: the monotonic one
// for every deadline and interval (the supervisor's loop, the keeper, the
// control plane), the wall clock for what is compared across nodes or shown
// to users (when a rank failed).
#pragma once

namespace aml {

double MonotonicSeconds();  // CLOCK_MONOTONIC
double WallSeconds();       // CLOCK_REALTIME

}  // namespace aml
