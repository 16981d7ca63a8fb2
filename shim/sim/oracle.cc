#include "shim/sim/oracle.h"
#include "shim/sim/oracle_seer.h"

#include <algorithm>

namespace aml {

uint8_t ExitBitOf(int code) {
  switch (code) {
    case 0: return kExit0;
    case 7: return kExit7;
    case 124: return kExit124;
    case 125: return kExit125;
    case 137: return kExit137;
    case 143: return kExit143;
    default: return 0;
  }
}

std::string ExitBitsText(uint8_t bits) {
  std::string out;
  const std::pair<uint8_t, const char*> names[] = {{kExit0, "0"},     {kExit7, "7"},
                                                   {kExit124, "124"}, {kExit125, "125"},
                                                   {kExit137, "137"}, {kExit143, "143"},
                                                   {kNoExit, "no exit"}};
  for (const auto& [bit, name] : names)
    if (bits & bit) out += (out.empty() ? "" : "|") + std::string(name);
  return out.empty() ? "nothing" : out;
}

std::vector<Foreseen> Foresee(const FaultPlan& plan, const OracleSetup& setup) {
  return seer::Seer(plan, setup).Run();
}

std::vector<double> ReachableUntil(const FaultPlan& plan, const OracleSetup& setup) {
  const seer::World w = seer::Facts(plan, setup);
  std::vector<double> out(w.n);
  for (int s = 0; s < w.n; ++s) out[s] = std::min(w.cutoff[s], w.dead_at[s]);
  return out;
}

}  // namespace aml
