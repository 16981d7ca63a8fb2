// What goes wrong in one simulated run of the control plane (aml-plane-sim,
// docs/control-plane.md, "Simulation"), drawn from the run's seed so that a
// seed replays it exactly.
//
//   none     a healthy job: every rank ends with 0 a few seconds after go
//   fail     one rank exits 7 (the job's first failure)
//   freeze   one shim stops processing (SIGSTOP, a node that stops answering)
//   cut      the link between one shim and its parent drops every frame
//   kill     one shim dies (its links close)
//   hang     no rank writes output: --hang-timeout judges the job hung
//   restart  one rank fails, --max-restarts 1: the next attempt ends well
//   sigterm  the launcher SIGTERMs one shim (in any phase)
//   random   any mix of the above, several at once, at random moments
//
// A SPEC is a comma-separated list of KIND[@SECONDS][:SHIM], e.g.
// "fail@12:37,freeze@40:5": the kinds above at a virtual time after go,
// on a shim (a random one when left out).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "shim/base/result.h"

namespace aml {

enum class FaultKind { kFail, kFreeze, kCut, kKill, kHang, kSigterm, kSlow, kStubbornRanks };
const char* FaultKindName(FaultKind k);

struct Fault {
  FaultKind kind = FaultKind::kFail;
  double at_s = 0;  // virtual seconds after go
  int shim = -1;    // -1 until drawn
};

struct FaultPlan {
  std::string name;          // what --faults said
  std::vector<Fault> faults;
  bool quiet = false;        // no rank writes output (the hang)
  int max_restarts = 0;
  bool restarts_succeed = false;  // attempts after the first end well
};

// Parses --faults (a name above or a SPEC) and draws what is left to chance
// from `rng` for a job of `shims` shims.
Result<FaultPlan> MakeFaultPlan(const std::string& spec, int shims, std::mt19937_64* rng);

}  // namespace aml
