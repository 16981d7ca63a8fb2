#include "shim/sim/fault_plan.h"

#include "shim/base/parse_int.h"
#include <cstdlib>

namespace aml {
namespace {

constexpr double kSteadyS = 35;  // past the 30 s of start-up: a steady job

int Draw(std::mt19937_64* rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(*rng);
}

double DrawS(std::mt19937_64* rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(*rng);
}

// The kind FaultKindName names `s`.
bool KindOf(const std::string& s, FaultKind* k) {
  for (FaultKind kind : {FaultKind::kFail, FaultKind::kFreeze, FaultKind::kCut, FaultKind::kKill,
                         FaultKind::kHang, FaultKind::kSigterm, FaultKind::kSlow,
                         FaultKind::kStubbornRanks})
    if (s == FaultKindName(kind)) {
      *k = kind;
      return true;
    }
  return false;
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
  }
  return "?";
}

Result<FaultPlan> MakeFaultPlan(const std::string& spec, int shims, std::mt19937_64* rng) {
  FaultPlan p;
  p.name = spec;
  auto shim = [&] { return Draw(rng, shims > 1 ? 1 : 0, shims - 1); };
  if (spec == "none") return p;
  if (spec == "fail") {
    p.faults.push_back({FaultKind::kFail, 3, Draw(rng, 0, shims - 1)});
  } else if (spec == "freeze" || spec == "cut" || spec == "kill") {
    FaultKind k = FaultKind::kFreeze;
    KindOf(spec, &k);
    if (shims < 2) return Error{"--faults " + spec + " needs --shims 2 or more"};
    p.faults.push_back({k, kSteadyS, shim()});
  } else if (spec == "hang") {
    p.quiet = true;
  } else if (spec == "restart") {
    p.max_restarts = 1;
    p.restarts_succeed = true;
    p.faults.push_back({FaultKind::kFail, 3, Draw(rng, 0, shims - 1)});
  } else if (spec == "sigterm") {
    p.faults.push_back({FaultKind::kSigterm, DrawS(rng, 0.5, 5), Draw(rng, 0, shims - 1)});
  } else if (spec == "random") {
    p.max_restarts = Draw(rng, 0, 3);
    p.restarts_succeed = Draw(rng, 0, 1) == 1;
    p.quiet = Draw(rng, 0, 5) == 0;
    const int n = Draw(rng, 1, 3);
    for (int i = 0; i < n; ++i) {
      static const FaultKind any[] = {FaultKind::kFail,    FaultKind::kFreeze,
                                      FaultKind::kCut,     FaultKind::kKill,
                                      FaultKind::kSigterm, FaultKind::kSlow,
                                      FaultKind::kStubbornRanks, FaultKind::kFail};
      Fault f;
      f.kind = any[Draw(rng, 0, 7)];
      if (shims < 2 && (f.kind == FaultKind::kFreeze || f.kind == FaultKind::kCut ||
                        f.kind == FaultKind::kKill))
        f.kind = FaultKind::kFail;
      f.at_s = DrawS(rng, 0, 60);
      f.shim = f.kind == FaultKind::kFail || f.kind == FaultKind::kSigterm ||
                       f.kind == FaultKind::kSlow || f.kind == FaultKind::kStubbornRanks
                   ? Draw(rng, 0, shims - 1)
                   : shim();
      p.faults.push_back(f);
    }
  } else {
    // KIND[@SECONDS][:SHIM],...
    size_t from = 0;
    while (from <= spec.size()) {
      const size_t comma = std::min(spec.find(',', from), spec.size());
      const std::string item = spec.substr(from, comma - from);
      from = comma + 1;
      Fault f;
      std::string kind = item, at, who;
      if (auto c = kind.find(':'); c != std::string::npos) {
        who = kind.substr(c + 1);
        kind.resize(c);
      }
      if (auto a = kind.find('@'); a != std::string::npos) {
        at = kind.substr(a + 1);
        kind.resize(a);
      }
      if (kind == "restart") {
        p.max_restarts = std::max(p.max_restarts, 1);
        p.restarts_succeed = true;
        kind = "fail";
      }
      if (kind == "hang") {
        p.quiet = true;
        continue;
      }
      if (!KindOf(kind, &f.kind))
        return Error{"--faults: '" + item + "' names no fault (none, fail, freeze, cut, kill, "
                     "hang, restart, sigterm, slow, stubborn, random, or KIND[@S][:SHIM],...)"};
      f.at_s = kSteadyS;
      if (!at.empty()) {
        char* end = nullptr;
        f.at_s = std::strtod(at.c_str(), &end);
        if (end == at.c_str() || *end || f.at_s < 0)
          return Error{"--faults: '" + item + "': '" + at + "' is no time in seconds"};
      }
      if (!who.empty()) {
        auto n = ParseInt("--faults", who, 0, shims - 1);
        if (!n.ok()) return Error{n.error().message + " (a shim of '" + item + "')"};
        f.shim = static_cast<int>(*n);
      } else {
        f.shim = f.kind == FaultKind::kFail ? Draw(rng, 0, shims - 1) : shim();
      }
      if (shims < 2 && f.shim == 0 &&
          (f.kind == FaultKind::kFreeze || f.kind == FaultKind::kCut))
        return Error{"--faults: '" + item + "' needs --shims 2 or more"};
      p.faults.push_back(f);
    }
  }
  return p;
}

}  // namespace aml
