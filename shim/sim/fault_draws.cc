// The plans --faults names, drawn from the run's seed (fault_draws.h).
#include "shim/sim/fault_draws.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace aml {

bool NeedsTwo(FaultKind k) {
  return k == FaultKind::kFreeze || k == FaultKind::kCut || k == FaultKind::kKill ||
         k == FaultKind::kPartition || k == FaultKind::kReplay || k == FaultKind::kTwin ||
         k == FaultKind::kOneWay;
}

// --faults pace: a skew for every clock, a step, and half the time a slow
// node (steadily 10 %, 30 % or 2x slower, or 2x in one step of 4).
void DrawPace(int shims, std::mt19937_64* rng, FaultPlan* p) {
  p->pace = true;
  p->skew_s = Draw(rng, 0, 500) / 1000.0;
  p->step_s = Draw(rng, 5, 50) / 100.0;
  p->jitter = Draw(rng, 0, 1) == 0 ? 0.03 : 0.1;
  if (shims < 2 || Draw(rng, 0, 1) == 0) {
    // Healthy; half the time beside one shim's checkpoint-like stalls.
    if (shims >= 3 && Draw(rng, 0, 1) == 0) p->pace_stall = Draw(rng, 0, shims - 1);
    return;
  }
  p->pace_slow = Draw(rng, 0, shims - 1);
  static const double kFactors[] = {1.1, 1.3, 2.0};
  p->factor = kFactors[Draw(rng, 0, 2)];
  p->burst = p->factor == 2.0 && Draw(rng, 0, 1) == 0 ? 4 : 1;
}

// --faults warm (above).
void DrawWarm(int shims, std::mt19937_64* rng, FaultPlan* p) {
  p->warm = true;
  p->max_restarts = 2;
  p->restarts_succeed = true;
  const double fail = DrawS(rng, 12, 40);
  p->faults.push_back({FaultKind::kFail, fail, Draw(rng, 0, shims - 1), {}});
  if (Draw(rng, 0, 2) == 0)  // the next attempt fails too, seconds in
    p->faults.push_back({FaultKind::kFail, fail + DrawS(rng, 2, 6), Draw(rng, 0, shims - 1), {}});
  if (shims >= 4 && Draw(rng, 0, 2) == 0) {
    // A node lost, a spare in its place (its standbys made at the start).
    p->spares = Draw(rng, 1, std::min(2, shims - 3));
    p->faults.push_back({FaultKind::kKill, DrawS(rng, 12, 40), Draw(rng, 1, shims - 1), {}});
  }
  if (Draw(rng, 0, 1) == 0)
    p->faults.push_back({Draw(rng, 0, 1) == 0 ? FaultKind::kStandbyLost
                                              : FaultKind::kStandbyRefuse,
                         DrawS(rng, 5, 45), Draw(rng, 0, shims - 1), {}});
  // A long import before the process group at times: the standby waits.
  if (Draw(rng, 0, 2) == 0) p->group_up_s = std::round(DrawS(rng, 5, 30) * 1000) / 1000;
}

// Rank 0's shim lost (a new root takes the job, docs/control-plane.md "A
// new root"): killed, frozen, or cut off by a partition of any size, alone
// in its plan, with 1 to 3 spares and a restart that ends well.
void DrawRootLoss(int shims, std::mt19937_64* rng, FaultPlan* p) {
  p->faults.clear();
  p->quiet = false;
  p->restarts_succeed = true;
  p->max_restarts = std::max(p->max_restarts, 1);
  if (p->spares == 0) p->spares = Draw(rng, 1, std::min(3, shims - 2));
  Fault f;
  f.at_s = DrawS(rng, 0, 60);
  const int how = Draw(rng, 0, 2);
  f.kind = how == 0 ? FaultKind::kKill : how == 1 ? FaultKind::kFreeze : FaultKind::kPartition;
  f.shim = 0;
  if (f.kind == FaultKind::kPartition) {
    const int size = Draw(rng, 1, shims - 1);
    std::set<int> g;
    if (Draw(rng, 0, 1) == 0) {
      const int first = Draw(rng, 1, shims - size);
      for (int s = first; s < first + size; ++s) g.insert(s);
    } else {
      while (static_cast<int>(g.size()) < size) g.insert(Draw(rng, 1, shims - 1));
    }
    f.group.assign(g.begin(), g.end());
    f.shim = f.group.front();
  }
  p->faults.push_back(f);
}

// --faults random: 1 to 3 faults of any kind, and at times a partition and
// a second failure a moment after a first (as a job's ranks fail together).
void DrawRandom(int shims, std::mt19937_64* rng, FaultPlan* p) {
  auto other = [&] { return Draw(rng, shims > 1 ? 1 : 0, shims - 1); };
  p->max_restarts = Draw(rng, 0, 3);
  p->restarts_succeed = Draw(rng, 0, 1) == 1;
  p->quiet = Draw(rng, 0, 5) == 0;
  const int n = Draw(rng, 1, 3);
  for (int i = 0; i < n; ++i) {
    static const FaultKind any[] = {FaultKind::kFail,    FaultKind::kFreeze,
                                    FaultKind::kCut,     FaultKind::kKill,
                                    FaultKind::kSigterm, FaultKind::kSlow,
                                    FaultKind::kStubbornRanks, FaultKind::kFail};
    Fault f;
    f.kind = any[Draw(rng, 0, 7)];
    if (shims < 2 && NeedsTwo(f.kind)) f.kind = FaultKind::kFail;
    f.at_s = DrawS(rng, 0, 60);
    f.shim = f.kind == FaultKind::kFail || f.kind == FaultKind::kSigterm ||
                     f.kind == FaultKind::kSlow || f.kind == FaultKind::kStubbornRanks
                 ? Draw(rng, 0, shims - 1)
                 : other();
    p->faults.push_back(f);
  }
  if (shims >= 3 && Draw(rng, 0, 5) == 0) {
    // A rack's switch: a range of shims, or shims anywhere (a bad route).
    Fault f;
    f.kind = FaultKind::kPartition;
    f.at_s = DrawS(rng, 0, 60);
    const int size = Draw(rng, 1, std::max(1, (shims - 1) / 2));
    if (Draw(rng, 0, 1) == 0) {
      const int first = Draw(rng, 1, shims - size);
      for (int s = first; s < first + size; ++s) f.group.push_back(s);
    } else {
      std::set<int> g;
      while (static_cast<int>(g.size()) < size) g.insert(Draw(rng, 1, shims - 1));
      f.group.assign(g.begin(), g.end());
    }
    f.shim = f.group.front();
    p->faults.push_back(f);
  }
  if (Draw(rng, 0, 5) == 0) {
    // Ranks that leave a process behind (a DataLoader worker, a shell's child).
    p->faults.push_back({FaultKind::kStraggler, DrawS(rng, 0, 60), Draw(rng, 0, shims - 1), {}});
  }
  if (shims >= 2 && Draw(rng, 0, 3) == 0) {
    // Someone at the doors: a stranger, a replayed hello, a linked rank's twin.
    static const FaultKind attacks[] = {FaultKind::kStranger, FaultKind::kReplay,
                                        FaultKind::kTwin};
    p->faults.push_back({attacks[Draw(rng, 0, 2)], DrawS(rng, 0, 60), other(), {}});
  }
  if (shims >= 3 && Draw(rng, 0, 2) == 0) {
    // Spare nodes: a loss or a node that keeps failing is routed around.
    p->spares = Draw(rng, 1, std::min(3, shims - 2));
    p->max_restarts = std::max(p->max_restarts, 1);
    if (Draw(rng, 0, 7) == 0) return DrawRootLoss(shims, rng, p);
    if (Draw(rng, 0, 3) == 0) {
      // A node whose check before the next attempt fails from then on.
      p->faults.push_back({FaultKind::kUnfit, DrawS(rng, 0, 60), Draw(rng, 0, shims - 1), {}});
    }
    if (Draw(rng, 0, 2) == 0) {
      // The root lost beside the other faults (before, during or after
      // them), and at times the new root too, once it holds the job.
      FaultPlan alone;
      alone.spares = p->spares;
      DrawRootLoss(shims, rng, &alone);
      p->faults.push_back(alone.faults[0]);
      p->max_restarts = std::max(p->max_restarts, 1);
      if (Draw(rng, 0, 2) == 0) {
        Fault again;
        again.kind = Draw(rng, 0, 1) == 0 ? FaultKind::kKill : FaultKind::kFreeze;
        again.at_s = alone.faults[0].at_s + DrawS(rng, 70, 100);
        again.shim = Fault::kRoot;
        p->faults.push_back(again);
        p->max_restarts = std::max(p->max_restarts, 2);
      }
    }
  }
  if (shims >= 2 && Draw(rng, 0, 5) == 0) {
    for (const Fault& first : p->faults) {
      if (first.kind != FaultKind::kFail) continue;
      // Within a few milliseconds (before rank 0's halt reaches the other
      // rank), or later within rank 0's window; either one first.
      Fault f = first;
      f.at_s = std::max(0.0, first.at_s + (Draw(rng, 0, 1) == 0 ? DrawS(rng, -0.002, 0.002)
                                                                 : DrawS(rng, 0, kBurstS)));
      while (f.shim == first.shim) f.shim = Draw(rng, 0, shims - 1);
      p->faults.push_back(f);
      break;
    }
  }
}

// --faults nemesis: faults that end (and at times failures and kills beside
// them), any number, at random moments, with spares and restarts: what
// Jepsen's nemesis does to a cluster, the root its first target.
void DrawNemesis(int shims, std::mt19937_64* rng, FaultPlan* p) {
  p->spares = Draw(rng, 1, std::min(3, shims - 2));
  p->max_restarts = Draw(rng, 1, 3);
  p->restarts_succeed = Draw(rng, 0, 2) > 0;
  const int n = Draw(rng, 1, 4);
  for (int i = 0; i < n; ++i) {
    static const FaultKind ending[] = {FaultKind::kFreeze, FaultKind::kCut,
                                       FaultKind::kPartition, FaultKind::kOneWay,
                                       FaultKind::kFreeze};
    Fault f;
    f.kind = ending[Draw(rng, 0, 4)];
    f.at_s = DrawS(rng, 0, 60);
    // Short (a hiccup), past the allowances (5 s steady, 30 s at start-up),
    // or long (after the heir's election).
    const int len = Draw(rng, 0, 2);
    f.for_s = std::round((len == 0 ? DrawS(rng, 0.5, 4) : len == 1 ? DrawS(rng, 6, 20)
                                                                    : DrawS(rng, 30, 90)) *
                         1000) / 1000;
    // The root half the time (a freeze of the root, or its node cut off: a
    // partition of every other shim).
    const bool root = Draw(rng, 0, 1) == 0;
    f.shim = root ? 0 : Draw(rng, 1, shims - 1);
    if (f.kind == FaultKind::kPartition) {
      std::set<int> g;
      if (root) {
        for (int s = 1; s < shims; ++s) g.insert(s);
      } else {
        const int size = Draw(rng, 1, std::max(1, shims - 2));
        while (static_cast<int>(g.size()) < size) g.insert(Draw(rng, 1, shims - 1));
      }
      f.group.assign(g.begin(), g.end());
      f.shim = f.group.front();
    } else if (f.kind == FaultKind::kCut || f.kind == FaultKind::kOneWay) {
      f.shim = Draw(rng, 1, shims - 1);  // its link to its parent (the root's, often)
    }
    p->faults.push_back(f);
  }
  if (Draw(rng, 0, 1) == 0)
    p->faults.push_back({FaultKind::kFail, DrawS(rng, 0, 60), Draw(rng, 0, shims - 1), {}});
  if (Draw(rng, 0, 3) == 0)
    p->faults.push_back({FaultKind::kKill, DrawS(rng, 0, 60), Draw(rng, 1, shims - 1), {}});
  if (Draw(rng, 0, 3) == 0)
    p->faults.push_back({FaultKind::kBusy, DrawS(rng, 0, 60),
                         Draw(rng, 0, 1) == 0 ? Draw(rng, 0, shims - 1) : Fault::kAll, {}});
}

}  // namespace aml
