// How aml-plane-sim draws a fault plan from its seed (fault_plan.h): the
// plans --faults names (pace, warm, rootloss, random, nemesis), and the
// draws they share. Private to shim/sim.
#pragma once

#include <random>

#include "shim/sim/fault_plan.h"

namespace aml {

constexpr double kSteadyS = 35;   // past the 30 s of start-up: a steady job
constexpr double kBurstS = 0.05;  // a second failure this close after a first

inline int Draw(std::mt19937_64* rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(*rng);
}

inline double DrawS(std::mt19937_64* rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(*rng);
}

// A fault kind that needs two shims (a link, a peer).
bool NeedsTwo(FaultKind k);

void DrawPace(int shims, std::mt19937_64* rng, FaultPlan* p);
void DrawWarm(int shims, std::mt19937_64* rng, FaultPlan* p);
void DrawRootLoss(int shims, std::mt19937_64* rng, FaultPlan* p);
void DrawRandom(int shims, std::mt19937_64* rng, FaultPlan* p);
void DrawNemesis(int shims, std::mt19937_64* rng, FaultPlan* p);

}  // namespace aml
