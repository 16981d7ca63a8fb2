#include "shim/control/liveness.h"

#include <algorithm>

namespace aml {

void Liveness::Heard(double now) {
  if (last_heard > 0) max_gap = std::max(now - last_heard, max_gap * kGapDecay);
  last_heard = now;
}

double Liveness::Allowance(double now, double startup_until) const {
  if (now < startup_until) return kMaxSilenceS;
  return std::clamp(kGapFactor * max_gap, kMinSilenceS, kMaxSilenceS);
}

}  // namespace aml
