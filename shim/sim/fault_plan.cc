#include "shim/sim/fault_plan.h"
#include "shim/sim/fault_draws.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "shim/base/parse_int.h"
#include "shim/base/units.h"

namespace aml {
namespace {

constexpr double kHealthyRunS = 5;  // a healthy attempt's length
constexpr double kPastFaultS = 15;  // and past the last fault

const FaultKind kKinds[] = {FaultKind::kFail,    FaultKind::kFreeze,   FaultKind::kCut,
                            FaultKind::kKill,    FaultKind::kHang,     FaultKind::kSigterm,
                            FaultKind::kSlow,    FaultKind::kStubbornRanks,
                            FaultKind::kPartition, FaultKind::kStraggler, FaultKind::kStranger,
                            FaultKind::kReplay,    FaultKind::kTwin,     FaultKind::kUnfit,
                            FaultKind::kBusy,      FaultKind::kStandbyLost,
                            FaultKind::kStandbyRefuse, FaultKind::kOneWay};

// The kind FaultKindName names `s`.
bool KindOf(const std::string& s, FaultKind* k) {
  for (FaultKind kind : kKinds)
    if (s == FaultKindName(kind)) {
      *k = kind;
      return true;
    }
  return false;
}

bool Ends(FaultKind k) {
  return k == FaultKind::kFreeze || k == FaultKind::kCut || k == FaultKind::kPartition ||
         k == FaultKind::kOneWay;
}

// "3-7" or "3+5+9" (or a mix, "1-3+8"): the shims of a partition, each in
// [1, shims - 1] (rank 0's side is the rest).
Result<std::vector<int>> ParseGroup(const std::string& item, const std::string& text,
                                    int shims) {
  std::set<int> out;
  size_t from = 0;
  while (from <= text.size()) {
    const size_t plus = std::min(text.find('+', from), text.size());
    const std::string part = text.substr(from, plus - from);
    from = plus + 1;
    const size_t dash = part.find('-');
    auto lo = ParseInt("--faults", part.substr(0, dash), 1, shims - 1);
    if (!lo.ok()) return Error{lo.error().message + " (a shim of '" + item + "')"};
    auto hi = dash == std::string::npos
                  ? lo
                  : ParseInt("--faults", part.substr(dash + 1), *lo, shims - 1);
    if (!hi.ok()) return Error{hi.error().message + " (a shim of '" + item + "')"};
    for (int64_t s = *lo; s <= *hi; ++s) out.insert(static_cast<int>(s));
  }
  return std::vector<int>(out.begin(), out.end());
}

std::string GroupText(const std::vector<int>& g) {
  std::string out;
  for (size_t i = 0; i < g.size();) {
    size_t j = i;
    while (j + 1 < g.size() && g[j + 1] == g[j] + 1) ++j;
    out += (out.empty() ? "" : "+") + std::to_string(g[i]) +
           (j > i ? "-" + std::to_string(g[j]) : "");
    i = j + 1;
  }
  return out;
}

void SetRun(FaultPlan* p) {
  double last = 0;
  for (const Fault& f : p->faults) last = std::max(last, f.at_s);
  p->run_s = p->quiet ? 1e9 : p->faults.empty() ? kHealthyRunS : last + kPastFaultS;
  if (p->pace) p->run_s = std::max(p->run_s, FaultPlan::kPaceRunS);
}

// KIND[@SECONDS][:SHIM],..., "hang" and "restarts=N[(failing)]": a spec, or
// what Describe() printed of a drawn plan (so that any run replays as one).
Status ParseSpec(const std::string& spec, int shims, std::mt19937_64* rng, FaultPlan* p) {
  auto other = [&] { return Draw(rng, shims > 1 ? 1 : 0, shims - 1); };
  size_t from = 0;
  while (from <= spec.size()) {
    const size_t comma = std::min(spec.find(',', from), spec.size());
    const std::string item = spec.substr(from, comma - from);
    from = comma + 1;
    if (item.rfind("skip=", 0) == 0 || item.rfind("nodump=", 0) == 0) {
      const bool skip = item[0] == 's';
      auto k = ParseInt("--faults", item.substr(skip ? 5 : 7), 0, std::max(0, shims - 1));
      if (!k.ok()) return Error{k.error().message + " (in '" + item + "')"};
      (skip ? p->skip : p->nodump) = static_cast<int>(*k);
      continue;
    }
    if (item == "pace") {
      p->pace = true;
      continue;
    }
    if (item.rfind("stall=", 0) == 0) {
      auto k = ParseInt("--faults", item.substr(6), 0, std::max(0, shims - 1));
      if (!k.ok()) return Error{k.error().message + " (in '" + item + "')"};
      p->pace_stall = static_cast<int>(*k);
      p->pace = true;
      continue;
    }
    if (item.rfind("paceslow=", 0) == 0 || item.rfind("burst=", 0) == 0) {
      const bool slow = item[0] == 'p';
      auto k = ParseInt("--faults", item.substr(slow ? 9 : 6), slow ? 0 : 1,
                        slow ? std::max(0, shims - 1) : 1000);
      if (!k.ok()) return Error{k.error().message + " (in '" + item + "')"};
      (slow ? p->pace_slow : p->burst) = static_cast<int>(*k);
      p->pace = true;
      continue;
    }
    if (item.rfind("step=", 0) == 0 || item.rfind("skew=", 0) == 0 ||
        item.rfind("factor=", 0) == 0 || item.rfind("jitter=", 0) == 0) {
      const size_t eq = item.find('=');
      char* end = nullptr;
      const double v = std::strtod(item.c_str() + eq + 1, &end);
      if (end == item.c_str() + eq + 1 || *end || !(v >= 0) || v > 1000)
        return Error{"--faults: '" + item + "': no number"};
      (item[0] == 'j' ? p->jitter : item[1] == 't' ? p->step_s : item[1] == 'k' ? p->skew_s
                                                                     : p->factor) = v;
      p->pace = true;
      continue;
    }
    if (item.rfind("groupup=", 0) == 0) {
      char* end = nullptr;
      const double v = std::strtod(item.c_str() + 8, &end);
      if (end == item.c_str() + 8 || *end || !(v >= 0) || v > 1000)
        return Error{"--faults: '" + item + "': no number of seconds"};
      p->group_up_s = v;
      continue;
    }
    if (item.rfind("spares=", 0) == 0) {
      auto k = ParseInt("--faults", item.substr(7), 0, std::max(0, shims - 1));
      if (!k.ok()) return Error{k.error().message + " (in '" + item + "')"};
      p->spares = static_cast<int>(*k);
      continue;
    }
    if (item.rfind("restarts=", 0) == 0) {
      std::string n = item.substr(9);
      p->restarts_succeed = true;
      if (n.size() > 9 && n.compare(n.size() - 9, 9, "(failing)") == 0) {
        n.resize(n.size() - 9);
        p->restarts_succeed = false;
      }
      auto r = ParseInt("--faults", n, 0, 1000);
      if (!r.ok()) return Error{r.error().message + " (in '" + item + "')"};
      p->max_restarts = static_cast<int>(*r);
      continue;
    }
    Fault f;
    std::string kind = item, at, who, lasts;
    if (auto t = kind.find('~'); t != std::string::npos) {
      lasts = kind.substr(t + 1);
      kind.resize(t);
    }
    if (auto c = kind.find(':'); c != std::string::npos) {
      who = kind.substr(c + 1);
      kind.resize(c);
    }
    if (auto a = kind.find('@'); a != std::string::npos) {
      at = kind.substr(a + 1);
      kind.resize(a);
    }
    if (kind == "restart") {
      p->max_restarts = std::max(p->max_restarts, 1);
      p->restarts_succeed = true;
      kind = "fail";
    }
    if (kind == "hang") {
      p->quiet = true;
      continue;
    }
    if (kind == "warm") {
      p->warm = true;
      continue;
    }
    if (!KindOf(kind, &f.kind))
      return Error{"--faults: '" + item + "' names no fault (none, fail, freeze, cut, kill, "
                   "partition, hang, restart, sigterm, slow, busy, stubborn, straggler, stranger, "
                   "replay, twin, unfit, standbylost, standbyrefuse, warm, pace, random, "
                   "rootloss, busyroot, or "
                   "KIND[@S][:SHIM],...)"};
    f.at_s = kSteadyS;
    if (!at.empty()) {
      char* end = nullptr;
      f.at_s = std::strtod(at.c_str(), &end);
      if (end == at.c_str() || *end || !(f.at_s >= 0))
        return Error{"--faults: '" + item + "': '" + at + "' is no time in seconds"};
    }
    if (NeedsTwo(f.kind) && shims < 2)
      return Error{"--faults: '" + item + "' needs --shims 2 or more"};
    if (!lasts.empty()) {
      char* end = nullptr;
      f.for_s = std::strtod(lasts.c_str(), &end);
      if (end == lasts.c_str() || *end || !(f.for_s >= 0) || !Ends(f.kind))
        return Error{"--faults: '" + item + "': '~" + lasts + "' ends no fault (a freeze, cut, "
                     "partition or oneway, for D seconds)"};
    }
    if (f.kind == FaultKind::kPartition) {
      if (who.empty()) who = std::to_string(other());
      // "half": shims 1 to N/2 (an even job splits in two halves).
      if (who == "half") who = shims >= 3 ? "1-" + std::to_string(shims / 2) : "1";
      auto g = ParseGroup(item, who, shims);
      if (!g.ok()) return g.error();
      f.group = std::move(*g);
      f.shim = f.group.front();
    } else if (who == "root" && (f.kind == FaultKind::kKill || f.kind == FaultKind::kFreeze)) {
      f.shim = Fault::kRoot;
    } else if (who == "all" && f.kind == FaultKind::kBusy) {
      f.shim = Fault::kAll;
    } else if (!who.empty()) {
      auto n = ParseInt("--faults", who, 0, shims - 1);
      if (!n.ok()) return Error{n.error().message + " (a shim of '" + item + "')"};
      f.shim = static_cast<int>(*n);
      if ((f.kind == FaultKind::kReplay || f.kind == FaultKind::kTwin) && f.shim == 0)
        return Error{"--faults: '" + item + "': rank 0's shim has no parent to say hello to"};
      if ((f.kind == FaultKind::kCut || f.kind == FaultKind::kOneWay) && f.shim == 0)
        return Error{"--faults: '" + item + "': rank 0's shim has no parent to be cut from"};
    } else {
      f.shim = f.kind == FaultKind::kFail ? Draw(rng, 0, shims - 1) : other();
    }
    p->faults.push_back(f);
  }
  // Without spares rank 0's loss ends the job at once: no run to simulate.
  for (const Fault& f : p->faults)
    if ((f.kind == FaultKind::kKill || f.kind == FaultKind::kFreeze) &&
        (f.shim == 0 || f.shim == Fault::kRoot) &&
        (p->spares == 0 || p->max_restarts == 0))
      return Error{"--faults: '" + std::string(FaultKindName(f.kind)) +
                   ":0': rank 0's shim can be lost only with spares=K and restarts=N "
                   "(a new root takes the job)"};
  return Ok();
}

}  // namespace

const char* FaultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::kFail: return "fail";
    case FaultKind::kFreeze: return "freeze";
    case FaultKind::kCut: return "cut";
    case FaultKind::kKill: return "kill";
    case FaultKind::kHang: return "hang";
    case FaultKind::kSigterm: return "sigterm";
    case FaultKind::kSlow: return "slow";
    case FaultKind::kStubbornRanks: return "stubborn";
    case FaultKind::kPartition: return "partition";
    case FaultKind::kStraggler: return "straggler";
    case FaultKind::kStranger: return "stranger";
    case FaultKind::kReplay: return "replay";
    case FaultKind::kTwin: return "twin";
    case FaultKind::kUnfit: return "unfit";
    case FaultKind::kBusy: return "busy";
    case FaultKind::kStandbyLost: return "standbylost";
    case FaultKind::kStandbyRefuse: return "standbyrefuse";
    case FaultKind::kOneWay: return "oneway";
  }
  return "?";
}

std::string FaultPlan::Describe() const {
  std::string out;
  for (const Fault& f : faults)
    out += (out.empty() ? "" : ",") + std::string(FaultKindName(f.kind)) + "@" +
           FormatNumber(f.at_s, "%.3f") + ":" +
           (f.kind == FaultKind::kPartition ? GroupText(f.group)
            : f.shim == Fault::kRoot         ? std::string("root")
            : f.shim == Fault::kAll          ? std::string("all")
                                             : std::to_string(f.shim)) +
           (f.for_s >= 0 ? "~" + FormatNumber(f.for_s, "%.3f") : "");
  if (quiet) out += (out.empty() ? "" : ",") + std::string("hang");
  if (warm) out += (out.empty() ? "" : ",") + std::string("warm");
  if (group_up_s != 0.5) out += ",groupup=" + FormatNumber(group_up_s, "%.3f");
  if (skip >= 0) out += ",skip=" + std::to_string(skip);
  if (nodump >= 0) out += ",nodump=" + std::to_string(nodump);
  if (max_restarts > 0)
    out += (out.empty() ? "" : ",") + std::string("restarts=") + std::to_string(max_restarts) +
           (restarts_succeed ? "" : "(failing)");
  if (spares > 0) out += (out.empty() ? "" : ",") + std::string("spares=") + std::to_string(spares);
  if (pace) {
    out += (out.empty() ? "" : ",") + std::string("pace,step=") + FormatNumber(step_s, "%.2f") +
           ",skew=" + FormatNumber(skew_s, "%.3f") + ",jitter=" + FormatNumber(jitter, "%g");
    if (pace_slow >= 0)
      out += ",paceslow=" + std::to_string(pace_slow) + ",factor=" + FormatNumber(factor, "%g") +
             ",burst=" + std::to_string(burst);
    if (pace_stall >= 0) out += ",stall=" + std::to_string(pace_stall);
  }
  return out.empty() ? "none" : out;
}

// A cycle of `burst` steps: each takes the step (and the ranks' jitter, up
// to `jitter` of it, and 1 ms for the all-reduce), one of them `factor`
// times longer; the job waits for the slow node the difference.
bool FaultPlan::Busy() const {
  for (const Fault& f : faults)
    if (f.kind == FaultKind::kBusy) return true;
  return false;
}

bool FaultPlan::Ends() const {
  for (const Fault& f : faults)
    if (f.for_s >= 0 || f.kind == FaultKind::kOneWay) return true;
  return false;
}

double FaultPlan::PaceWaitShare() const {
  if (pace_slow < 0) return 0;
  const double wait = (factor - 1) * step_s;
  // What the judge counts of a node late in fewer than half the steps:
  // the lateness beyond its floor (a busy core's).
  const double counted =
      burst < 2 ? wait
                : std::max(0.0, wait - std::max(StragglerJudge::kMinLateS,
                                                StragglerJudge::kLateFrac * step_s * factor));
  const double stalls =
      pace_stall >= 0 ? burst * (kStallS / StallEvery() + HiccupS() / kHiccupEvery) : 0;
  const double cycle = burst * (step_s * (1 + jitter) + 0.001) + wait + stalls;
  return counted / cycle;
}

int FaultPlan::StallEvery() const {
  return std::max(1, static_cast<int>(std::ceil(kStallEveryS / (step_s + 0.001))));
}

Result<FaultPlan> MakeFaultPlan(const std::string& spec, int shims, std::mt19937_64* rng) {
  FaultPlan p;
  p.name = spec;
  auto other = [&] { return Draw(rng, shims > 1 ? 1 : 0, shims - 1); };
  if (spec == "none") {
  } else if (spec == "fail") {
    p.faults.push_back({FaultKind::kFail, 3, Draw(rng, 0, shims - 1), {}});
  } else if (spec == "stranger" || spec == "replay" || spec == "twin") {
    FaultKind k = FaultKind::kStranger;
    KindOf(spec, &k);
    if (shims < 2) return Error{"--faults " + spec + " needs --shims 2 or more"};
    p.faults.push_back({k, DrawS(rng, 0, 40), other(), {}});
  } else if (spec == "freeze" || spec == "cut" || spec == "kill" || spec == "partition") {
    FaultKind k = FaultKind::kFreeze;
    KindOf(spec, &k);
    if (shims < 2) return Error{"--faults " + spec + " needs --shims 2 or more"};
    Fault f{k, kSteadyS, other(), {}};
    if (k == FaultKind::kPartition) {
      // A tenth of the job (at least one shim), from a random one on.
      const int size = std::max(1, (shims - 1) / 10);
      const int first = Draw(rng, 1, shims - size);
      for (int s = first; s < first + size; ++s) f.group.push_back(s);
      f.shim = first;
    }
    p.faults.push_back(f);
  } else if (spec == "hang") {
    p.quiet = true;
  } else if (spec == "restart") {
    p.max_restarts = 1;
    p.restarts_succeed = true;
    p.faults.push_back({FaultKind::kFail, 3, Draw(rng, 0, shims - 1), {}});
  } else if (spec == "sigterm") {
    p.faults.push_back({FaultKind::kSigterm, DrawS(rng, 0.5, 5), Draw(rng, 0, shims - 1), {}});
  } else if (spec == "random") {
    DrawRandom(shims, rng, &p);
    // A hang's culprit at times, and a rank that never answers its pipe
    // (drawn last: the draws above replay as they did).
    if (p.quiet) {
      if (Draw(rng, 0, 2) > 0) p.skip = Draw(rng, 0, shims - 1);
      if (Draw(rng, 0, 3) == 0) p.nodump = Draw(rng, 0, shims - 1);
    }
    // A busy machine at times (a node, or every node): descheduled shims
    // beside whatever else the plan holds (drawn last too).
    if (Draw(rng, 0, 4) == 0)
      p.faults.push_back({FaultKind::kBusy, DrawS(rng, 0, 60),
                          Draw(rng, 0, 1) == 0 ? Draw(rng, 0, shims - 1) : Fault::kAll, {}});
    // --warm-restart at times, and then at times a standby fault (drawn
    // last too).
    if (Draw(rng, 0, 3) == 0) {
      p.warm = true;
      if (Draw(rng, 0, 2) == 0)
        p.faults.push_back({Draw(rng, 0, 1) == 0 ? FaultKind::kStandbyLost
                                                 : FaultKind::kStandbyRefuse,
                            DrawS(rng, 0, 60), Draw(rng, 0, shims - 1), {}});
    }
    // Faults that end at times (drawn last too): a freeze thaws, a cut or
    // a partition heals, or a one-way cut beside the rest.
    if (shims >= 3 && Draw(rng, 0, 5) == 0) {
      std::vector<Fault*> ending;
      for (Fault& f : p.faults)
        if (f.kind == FaultKind::kFreeze || f.kind == FaultKind::kCut ||
            f.kind == FaultKind::kPartition)
          ending.push_back(&f);
      if (!ending.empty() && Draw(rng, 0, 1) == 0) {
        ending[static_cast<size_t>(Draw(rng, 0, static_cast<int>(ending.size()) - 1))]->for_s =
            std::round(DrawS(rng, 0.5, 60) * 1000) / 1000;
      } else {
        p.faults.push_back({FaultKind::kOneWay, DrawS(rng, 0, 60), Draw(rng, 1, shims - 1), {}});
        if (Draw(rng, 0, 1) == 0) p.faults.back().for_s = std::round(DrawS(rng, 0.5, 60) * 1000) / 1000;
      }
    }
  } else if (spec == "nemesis") {
    if (shims < 3) return Error{"--faults nemesis needs --shims 3 or more"};
    DrawNemesis(shims, rng, &p);
  } else if (spec == "warm") {
    DrawWarm(shims, rng, &p);
  } else if (spec == "pace") {
    DrawPace(shims, rng, &p);
  } else if (spec == "rootloss") {
    if (shims < 3) return Error{"--faults rootloss needs --shims 3 or more"};
    DrawRootLoss(shims, rng, &p);
  } else if (spec == "busyroot") {
    // The root frozen on a busy machine: the root's heir (or every shim)
    // descheduled now and then from the start, so that the root's
    // children find its silence at moments seconds apart.
    if (shims < 3) return Error{"--faults busyroot needs --shims 3 or more"};
    p.spares = Draw(rng, 1, std::min(3, shims - 2));
    p.max_restarts = 1;
    p.restarts_succeed = true;
    p.faults.push_back({FaultKind::kBusy, 0, Draw(rng, 0, 1) == 0 ? 1 : Fault::kAll, {}});
    p.faults.push_back({FaultKind::kFreeze, DrawS(rng, 0, 60), 0, {}});
  } else {
    Status st = ParseSpec(spec, shims, rng, &p);
    if (!st.ok()) return st.error();
  }
  SetRun(&p);
  return p;
}

}  // namespace aml
