#include "shim/control/plane_timing.h"

#include <algorithm>

namespace aml {

PlaneTiming TimingOf(std::optional<double> hang_timeout_s, bool flight_recorder) {
  PlaneTiming t;
  if (hang_timeout_s) {
    t.beat_s = std::clamp(*hang_timeout_s / 10, 0.25, 1.0);
    if (flight_recorder) t.look_every_s = *hang_timeout_s / 3;
  }
  return t;
}

}  // namespace aml
