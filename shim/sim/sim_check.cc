#include "shim/sim/sim_check.h"
#include "shim/sim/pace_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "shim/base/json_read.h"
#include "shim/base/units.h"
#include "shim/control/roster.h"
#include "shim/control/wire.h"

namespace aml {
namespace {

constexpr double kEps = 0.02;

std::string Num(double x) { return FormatNumber(x, "%.3f"); }

// failure.json's "restart_refused", by its kind.
std::string RefusedKind(const std::string& why_not) {
  if (why_not.empty()) return "";
  if (why_not.find("no spare left") != std::string::npos) return "nospare";
  if (why_not.find("no majority") != std::string::npos) return "majority";
  if (why_not.find("spent") != std::string::npos) return "spent";
  if (why_not.find("without progress") != std::string::npos) return "same";
  if (why_not.find("lost a shim") != std::string::npos) return "lost";
  return "other: " + why_not;
}

// "rank 12's shim" in a message: 12 (the first one named after `from`).
int ShimNamed(const std::string& text, size_t from = 0) {
  const size_t at = text.find("rank ", from);
  if (at == std::string::npos) return -1;
  const size_t end = text.find("'s shim", at);
  if (end == std::string::npos) return -1;
  return std::atoi(text.c_str() + at + 5);
}

// "0-72,90,74-88": runs of consecutive numbers, as restart orders write them.
std::string ListText(const std::vector<int>& v) { return Roster::Runs(v); }

std::string SetText(const std::set<int>& s) {
  std::string out;
  int shown = 0;
  for (int x : s) {
    if (++shown > 8) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(x);
  }
  return "{" + out + "}";
}

// The ways `run` differs from outcome `f` (empty: it is that outcome).
std::vector<std::string> Differences(const FaultPlan& plan, const Foreseen& f,
                                     const RunRecord& run) {
  std::vector<std::string> out;
  const ShimRecord& root = run.shims[static_cast<size_t>(run.root)];
  for (size_t s = 0; s < run.shims.size(); ++s) {
    const ShimRecord& r = run.shims[s];
    const uint8_t bit = r.exited ? ExitBitOf(r.code) : static_cast<uint8_t>(kNoExit);
    if (!(f.codes[s] & bit)) {
      out.push_back("shim " + std::to_string(s) + " " +
                    (r.exited ? "exited " + std::to_string(r.code) : std::string("never exited")) +
                    "; expected " + ExitBitsText(f.codes[s]));
      if (out.size() > 3) return out;
    }
  }
  if (f.root != run.root && f.root != -2) {
    out.push_back(run.root != 0 ? "shim " + std::to_string(run.root) + " took the job"
                                : std::string("no heir took the job"));
    if (f.root > 0) out.back() += " (foreseen: shim " + std::to_string(f.root) + ")";
    return out;
  }
  if (f.loose) return out;
  if (run.restarts != f.restarts)
    out.push_back(std::to_string(run.restarts) + " restarts, expected " +
                  std::to_string(f.restarts));
  // --spares: each restart gives each NODE_RANK to the shim the rules say.
  if (plan.spares > 0 && run.restarts == f.restarts) {
    size_t k = 0;
    for (const auto& [t, frame] : run.verdicts) {
      auto m = Msg::Decode(frame);
      if (!m.ok() || m->type() != "restart" || k >= f.rosters.size()) continue;
      if (Roster::Decode(m->Str("nodes")) != f.rosters[k]) {
        out.push_back("restart " + std::to_string(k + 1) + " at " + Num(t) +
                      " s gives the NODE_RANKs to shims " + m->Str("nodes") + ", expected " +
                      ListText(f.rosters[k]));
        break;
      }
      ++k;
    }
  }
  if (!root.exited) return out;
  // When rank 0 gave the last verdict (or its part ended).
  const double decided = root.verdict_at >= 0   ? root.verdict_at
                         : root.signalled_at >= 0 ? root.signalled_at
                                                  : root.exit_at;
  if (f.code >= 0 && root.code == f.code &&
      (decided < f.decided_lo - kEps || decided > f.decided_hi + kEps))
    out.push_back("rank 0 decided at " + Num(decided) + " s, expected within " +
                  Num(f.decided_lo) + "-" + Num(f.decided_hi) + " s");
  if (!run.has_final) return out;
  const StopOrder& o = run.final_order;
  // A root that may have been replaced beyond a cut, or that lost the
  // majority, writes no record: its word is its own node's.
  const bool no_majority = o.no_record && o.message.find("no majority") != std::string::npos &&
                           (f.refused == "majority" || f.refused_also.count("majority"));
  if (f.no_record || no_majority) {
    if (!o.attempts_json.empty() || !o.retired_json.empty() || !o.failure_json.empty())
      out.push_back("the root wrote the job's record (" + o.why_not.substr(0, 120) +
                    "), though a heir it lost may hold the job");
    return out;
  }
  // failure.json: the attempts and why no restart followed.
  if (plan.max_restarts > 0 && root.code != 0 && root.code != 143) {
    auto j = ParseJson(o.attempts_json.empty() ? "[]" : o.attempts_json);
    const size_t n = j.ok() ? j->items.size() : 0;
    if (n != f.attempts.size()) {
      out.push_back("failure.json lists " + std::to_string(n) + " attempts, expected " +
                    std::to_string(f.attempts.size()));
    } else {
      for (size_t i = 0; i < n; ++i) {
        const JsonValue& a = j->items[i];
        const JsonValue* code = a.Find("exit_code");
        const JsonValue* rank = a.Find("rank");
        const JsonValue* hang = a.Find("hang");
        const ForeseenAttempt& e = f.attempts[i];
        const int c = code ? std::atoi(code->text.c_str()) : -1;
        if (c != e.code)
          out.push_back("failure.json's attempt " + std::to_string(i + 1) + " has exit_code " +
                        std::to_string(c) + ", expected " + std::to_string(e.code));
        if (!e.ranks.empty() &&
            (!rank || rank->kind != JsonValue::Kind::kNumber ||
             !e.ranks.count(std::atoi(rank->text.c_str()))))
          out.push_back("failure.json's attempt " + std::to_string(i + 1) + " names rank " +
                        (rank ? rank->text : "none") + ", expected one of " + SetText(e.ranks));
        if ((hang && hang->text == "true") != e.hang)
          out.push_back("failure.json's attempt " + std::to_string(i + 1) + " has hang " +
                        (hang ? hang->text : "none"));
        // --warm-restart: a restart's attempt sums what each shim said of
        // its one rank (the simulator's shims run one each).
        if (const JsonValue* w = a.Find("warm_restart")) {
          auto num = [w](const char* k) {
            const JsonValue* v = w->Find(k);
            return v ? std::atoi(v->text.c_str()) : -1;
          };
          const int shims = num("shims"), warm = num("warm"), cold = num("cold");
          if (!plan.warm || i == 0 || shims < 1 || shims > static_cast<int>(run.shims.size()) ||
              warm < 0 || cold < 0 || warm + cold != shims)
            out.push_back("failure.json's attempt " + std::to_string(i + 1) +
                          " says its ranks started " + std::to_string(warm) + " warm and " +
                          std::to_string(cold) + " cold as " + std::to_string(shims) +
                          " shims said" + (plan.warm ? "" : ", without --warm-restart"));
        }
      }
    }
    if (RefusedKind(o.why_not) != f.refused && !f.refused_also.count(RefusedKind(o.why_not)))
      out.push_back("failure.json's restart_refused is '" + o.why_not + "', expected " +
                    (f.refused.empty() ? "none" : "'" + f.refused + "'"));
  }
  // Each failure's verdict names the earliest failing rank (the stop that
  // ends the job, or the restart line of a round).
  std::vector<int> named;
  for (const auto& [t, frame] : run.verdicts) {
    (void)t;
    auto m = Msg::Decode(frame);
    if (!m.ok()) continue;
    if (m->type() == "stop" && m->Str("kind") == "fail") named.push_back(static_cast<int>(m->Int("rank")));
    if (m->type() == "restart") {
      const std::string line = m->Str("line");
      const size_t at = line.find(" after rank ");
      if (at != std::string::npos) named.push_back(std::atoi(line.c_str() + at + 12));
    }
  }
  std::vector<const ForeseenAttempt*> failed;
  for (const ForeseenAttempt& a : f.ended)
    if (a.code == 7 && a.announced) failed.push_back(&a);
  if (run.shims.size() > 1 && named.size() != failed.size()) {
    out.push_back("rank 0 named " + std::to_string(named.size()) + " failures, expected " +
                  std::to_string(failed.size()));
  } else if (run.shims.size() > 1) {
    for (size_t i = 0; i < named.size(); ++i)
      if (!failed[i]->ranks.count(named[i])) {
        out.push_back("rank 0 named rank " + std::to_string(named[i]) + " as failure " +
                      std::to_string(i + 1) + "'s first, expected one of " +
                      SetText(failed[i]->ranks));
        break;
      }
  }
  // The ranks are ended at once on a failure; each restart comes when the
  // round and its back-off allow.
  std::vector<double> halts, restarts;
  for (const auto& [t, frame] : run.verdicts) {
    const std::string type = Msg::Decode(frame).ok() ? Msg::Decode(frame)->type() : "";
    if (type == "halt") halts.push_back(t);
    if (type == "restart") restarts.push_back(t);
  }
  if (run.shims.size() > 1) {
    auto within = [&](const char* what, const std::vector<double>& got,
                      const std::vector<std::pair<double, double>>& want) {
      if (got.size() != want.size()) {
        out.push_back(std::string("rank 0 sent ") + std::to_string(got.size()) + " " + what +
                      ", expected " + std::to_string(want.size()));
        return;
      }
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] < want[i].first - kEps || got[i] > want[i].second + kEps) {
          out.push_back(std::string(what) + " " + std::to_string(i + 1) + " at " + Num(got[i]) +
                        " s, expected within " + Num(want[i].first) + "-" +
                        Num(want[i].second) + " s");
          return;
        }
    };
    // A halt the oracle allows beside its own (an old root's, of its side
    // before a heir took the job): whichever one in its window leaves the
    // others where they are due (the old root's comes first, seed 1335).
    if (f.extra_halt.first >= 0 && halts.size() == f.halts.size() + 1)
      for (size_t i = 0; i < halts.size(); ++i) {
        if (halts[i] < f.extra_halt.first - kEps || halts[i] > f.extra_halt.second + kEps)
          continue;
        std::vector<double> rest = halts;
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
        bool fits = true;
        for (size_t k = 0; k < rest.size(); ++k)
          fits = fits && rest[k] >= f.halts[k].first - kEps && rest[k] <= f.halts[k].second + kEps;
        if (fits) {
          halts = rest;
          break;
        }
      }
    within("halts", halts, f.halts);
    within("restarts", restarts, f.restart_times);
  }
  // --spares: the record names every shim retired (failure.json's "retired").
  if (plan.spares > 0 && root.code != 0 && root.code != 143) {
    std::set<int> retired;
    auto j = ParseJson(o.retired_json.empty() ? "[]" : o.retired_json);
    if (j.ok())
      for (const JsonValue& r : j->items)
        if (const JsonValue* s = r.Find("shim")) retired.insert(std::atoi(s->text.c_str()));
    const bool within =
        std::includes(retired.begin(), retired.end(), f.retired.begin(), f.retired.end()) &&
        std::includes(f.retired_max.begin(), f.retired_max.end(), retired.begin(), retired.end());
    if (!within)
      out.push_back("failure.json's retired shims are " + SetText(retired) + ", expected " +
                    SetText(f.retired) + " to " + SetText(f.retired_max));
  }
  // A loss names a shim that was lost.
  if (root.code == 125 && f.code == 125 && !f.lost.empty()) {
    const int lost = ShimNamed(o.message);
    if (!f.lost.count(lost))
      out.push_back("the job's end names rank " + std::to_string(lost) + "'s shim as lost (" +
                    o.message.substr(0, 160) + "), expected one of " + SetText(f.lost));
  }
  // A hang's roll-call names the shims that sent no stacks.
  if (root.code == 124 && f.code == 124) {
    auto j = ParseJson(o.failure_json.empty() ? "{}" : o.failure_json);
    std::set<int> missing;
    if (j.ok())
      if (const JsonValue* h = j->Find("hang"))
        if (const JsonValue* m = h->Find("missing"))
          for (const JsonValue& v : m->items) missing.insert(ShimNamed(v.text));
    for (int s : f.missing_min)
      if (!missing.count(s)) {
        out.push_back("the roll-call does not name shim " + std::to_string(s) +
                      " as silent; it names " + SetText(missing));
        break;
      }
    for (int s : missing)
      if (!f.missing_max.count(s)) {
        out.push_back("the roll-call names shim " + std::to_string(s) + " as silent; expected " +
                      "at most " + SetText(f.missing_max));
        break;
      }
    // And the culprit its flight records name (docs/control-plane.md,
    // "Naming the culprit"): the node of the rank that skipped the
    // collective, or none.
    if (!f.culprit.empty()) {
      int blamed = -1;
      if (j.ok())
        if (const JsonValue* c = j->Find("culprit"))
          if (const JsonValue* shim = c->Find("shim"); shim && shim->kind == JsonValue::Kind::kNumber)
            blamed = std::atoi(shim->text.c_str());
      if (!f.culprit.count(blamed))
        out.push_back("the roll-call's culprit is shim " + std::to_string(blamed) + ", expected " +
                      SetText(f.culprit) + " (-1: none)");
    }
  }
  return out;
}

}  // namespace

// The timing rules that hold whatever the outcome (docs/control-plane.md):
// every shim gets rank 0's order to end its ranks within the tree's
// latency, exits within --grace + 1 s of its stop or its launcher's signal,
// and the roll-call ends by its deadline (job_machine.cc: 20 s, and
// --dump-timeout with the flight recorder, on in every hang plan: a shim
// still awaited, neither answering nor lost, is waited for that long).
std::string Timing(const FaultPlan& plan, const OracleSetup& setup, const RunRecord& run) {
  const double L = setup.slack_s;
  const std::vector<double> reach = ReachableUntil(plan, setup);
  double first_end = -1, collect = -1;
  for (const auto& [t, frame] : run.verdicts) {
    auto m = Msg::Decode(frame);
    if (!m.ok()) continue;
    const std::string& type = m->type();
    if (first_end < 0 && (type == "halt" || type == "stop" || type == "end")) first_end = t;
    if (type == "collect" && collect < 0) collect = t;
    if (collect >= 0 && (type == "stop" || type == "end" || type == "restart") && t >= collect) {
      // A roll-call whose root was lost before it ended ends with the new
      // root's word, after the election (aml-plane-sim, seed 101297).
      bool replaced = false;
      for (double at : run.takeovers) replaced = replaced || (at >= collect && at <= t);
      const double most = 20 + (setup.hang_s > 0 ? kSimDumpTimeoutS : 0);
      if (t > collect + most + L && !replaced)
        return "the roll-call ended " + Num(t - collect) + " s after rank 0 asked for stacks "
               "(at most " + Num(most) + " s)";
      collect = -2;  // checked
    }
  }
  for (size_t s = 1; s < run.shims.size() && first_end >= 0; ++s) {
    const ShimRecord& r = run.shims[s];
    if (reach[s] < first_end + L || (r.exited && r.exit_at < first_end + L) ||
        (r.exited && r.code == 0) || (r.signalled_at >= 0 && r.signalled_at < first_end + L))
      continue;
    if (r.stop_at < 0 || r.stop_at > first_end + L)
      return "shim " + std::to_string(s) + " was told to end its ranks " +
             (r.stop_at < 0 ? std::string("never") : Num(r.stop_at - first_end) + " s") +
             " after rank 0 ordered it (at " + Num(first_end) + " s; the tree's latency is " +
             Num(L) + " s)";
  }
  for (size_t s = 0; s < run.shims.size(); ++s) {
    const ShimRecord& r = run.shims[s];
    if (!r.exited) continue;
    double from = 1e18;
    if (r.verdict_at >= 0) from = r.verdict_at;
    if (r.signalled_at >= 0) from = std::min(from, r.signalled_at);
    if (from < 1e18 && r.exit_at > from + setup.grace_s + 1 + L)
      return "shim " + std::to_string(s) + " exited " + Num(r.exit_at - from) +
             " s after its stop or its launcher's signal (--grace " +
             FormatNumber(setup.grace_s, "%g") + " s + 1 s)";
  }
  return "";
}

std::string CheckRun(const FaultPlan& plan, const OracleSetup& setup, const RunRecord& run) {
  if (std::string t = Timing(plan, setup, run); !t.empty()) return t;
  if (std::string t = CheckPace(plan, run); !t.empty()) return t;
  const std::vector<Foreseen> ways = Foresee(plan, setup);
  const Foreseen* nearest = nullptr;
  std::vector<std::string> nearest_diff;
  const bool explain = std::getenv("AML_SIM_EXPLAIN") != nullptr;
  for (const Foreseen& f : ways) {
    std::vector<std::string> d = Differences(plan, f, run);
    if (explain) {
      std::fprintf(stderr, "foreseen: %s\n", f.story.c_str());
      for (const std::string& x : d) std::fprintf(stderr, "    %s\n", x.c_str());
    }
    if (d.empty()) return "";
    if (!nearest || d.size() < nearest_diff.size()) {
      nearest = &f;
      nearest_diff = std::move(d);
    }
  }
  return "oracle: " + nearest_diff[0] + " (the nearest of " + std::to_string(ways.size()) +
         " foreseen outcomes: " + nearest->story + ")";
}

}  // namespace aml
