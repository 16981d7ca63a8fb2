#include "shim/sim/pace_check.h"

#include "shim/base/units.h"

namespace aml {

std::string CheckPace(const FaultPlan& plan, const RunRecord& run) {
  if (!plan.pace) return "";
  for (const auto& [shim, look] : run.named)
    if (shim != plan.pace_slow)
      return "the straggler check named shim " + std::to_string(shim) + " slow in look " +
             std::to_string(look) + ", a healthy node (clocks skewed by up to " +
             FormatNumber(plan.skew_s, "%.3f") + " s)";
  const double share = plan.PaceWaitShare();
  // (Another fault may end the attempt before the looks could name it.)
  if (plan.pace_slow >= 0 && share >= kMustNameShare && plan.PaceClearOfJitter() &&
      plan.faults.empty()) {
    auto it = run.named.find(plan.pace_slow);
    if (it == run.named.end() || it->second > kMustNameLooks)
      return "the straggler check named shim " + std::to_string(plan.pace_slow) + " (" +
             FormatNumber(plan.factor, "%g") + " times slower in one step of " +
             std::to_string(plan.burst) + ": the job waits for it " +
             FormatNumber(100 * share, "%.1f") + " % of the time) " +
             (it == run.named.end() ? std::string("never") : "in look " + std::to_string(it->second)) +
             ", not within " + std::to_string(kMustNameLooks) + " looks (" +
             std::to_string(run.pace_looks) + " judged)";
  }
  if (run.pace_bytes_max > kMaxPartBytes)
    return "a look's part of " + std::to_string(run.pace_bytes_max) + " bytes went over a link "
           "(at most " + std::to_string(kMaxPartBytes) + ")";
  return "";
}

}  // namespace aml
