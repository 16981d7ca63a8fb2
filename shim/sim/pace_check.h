// What the straggler check must have done in a simulated run (--faults
// pace, fault_plan.h; docs/control-plane.md "Slow nodes"): no healthy node
// is ever named, whatever the clocks' skew; a node the job waits for
// kMustNameShare of its time or more, and whose slowdown is twice the
// ranks' jitter or more, is named within kMustNameLooks looks (when no
// other fault ends the attempt first);
// and no look's part on any link is over kMaxPartBytes.
#pragma once

#include <string>

#include "shim/sim/fault_plan.h"
#include "shim/sim/sim_check.h"

namespace aml {

constexpr double kMustNameShare = 0.075;  // 1.5 times the judge's 5 %
constexpr int kMustNameLooks = 3;         // its 3 in a row, as the docs say
constexpr long long kMaxPartBytes = 16 << 10;  // one group's 64 collectives

// "" when the run kept the rules; else which broke.
std::string CheckPace(const FaultPlan& plan, const RunRecord& run);

}  // namespace aml
