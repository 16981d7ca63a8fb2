#include "shim/control/pace/straggler_judge.h"

#include <algorithm>

#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/units.h"

namespace aml {
namespace {

struct Tally {
  int late = 0;
  int64_t late_us = 0;
  int64_t counted_us = 0;  // each collective's lateness up to its group's period
  int64_t beyond_us = 0;   // each collective's lateness beyond its floor
  std::map<int, int> last;  // how often each of its ranks entered last, late
  double wait_frac = 0;    // of the look's span, in the group that waited most
  double beyond_frac = 0;  // the same, counting what lies beyond the floor
};

}  // namespace

std::vector<StragglerJudge::Change> StragglerJudge::Look(const PaceSample& s, int parts) {
  ++looks_done_;
  const bool whole = s.shims >= parts;
  std::map<int, Tally> tally;
  int ops = 0;
  int64_t all_counted_us = 0;
  for (const PaceGroup& g : s.groups) {
    // Its nodes: the most shims any of its collectives had so far (a look
    // with a part missing judges none of its collectives).
    int& full = full_[g.pg];
    if (whole)
      for (const PaceOp& op : g.ops) full = std::max(full, op.shims);
    if (full < 2) continue;  // one node's group (or not yet known): nothing to compare
    int64_t& done = last_seq_.emplace(g.pg, -1).first->second;
    std::vector<const PaceOp*> judged;
    for (const PaceOp& op : g.ops)
      if (op.seq > done && op.shims == full && op.next.shim >= 0) judged.push_back(&op);
    if (judged.size() < 2) continue;
    // The group's period: the median step between consecutive collectives.
    std::vector<int64_t> steps;
    for (size_t k = 1; k < judged.size(); ++k)
      if (judged[k]->seq == judged[k - 1]->seq + 1)
        steps.push_back(judged[k]->next.t_us - judged[k - 1]->next.t_us);
    if (steps.empty()) continue;
    std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
    const int64_t period_us = std::max<int64_t>(0, steps[steps.size() / 2]);
    done = judged.back()->seq;
    const int64_t span_us =
        std::max<int64_t>(1, judged.back()->next.t_us - judged.front()->next.t_us + period_us);
    // Lateness below the clocks' bounds, kLateFrac of the period or
    // kMinLateS is not counted.
    const auto period_floor_us = static_cast<int64_t>(kLateFrac * static_cast<double>(period_us));
    const auto min_us = static_cast<int64_t>(kMinLateS * 1e6);
    std::map<int, Tally> group;
    for (const PaceOp* op : judged) {
      const int64_t late_us = op->last.t_us - op->next.t_us;
      const int64_t bounds_us = op->last.bound_us + op->next.bound_us;
      const int64_t floor_us = std::max({bounds_us, period_floor_us, min_us});
      if (late_us <= floor_us) continue;
      Tally& t = group[op->last.shim];
      ++t.late;
      t.late_us += late_us;
      t.beyond_us += late_us - floor_us;
      const int64_t counted_us = std::min(late_us, std::max(period_us, min_us));
      t.counted_us += counted_us;
      ++t.last[op->last.rank];
      all_counted_us += counted_us;
    }
    ops += static_cast<int>(judged.size());
    for (auto& [shim, t] : group) {
      Tally& all = tally[shim];
      all.late += t.late;
      all.late_us += t.late_us;
      all.counted_us += t.counted_us;
      for (const auto& [rank, k] : t.last) all.last[rank] += k;
      all.wait_frac = std::max(all.wait_frac, static_cast<double>(t.late_us) /
                                                  static_cast<double>(span_us));
      all.beyond_frac = std::max(all.beyond_frac, static_cast<double>(t.beyond_us) /
                                                      static_cast<double>(span_us));
    }
  }
  judged_ += ops;
  std::vector<Change> changes;
  if (ops < kMinOps) return changes;  // too little to say anything: streaks stand
  for (auto& [shim, n] : nodes_) {
    if (tally.count(shim)) continue;
    n.late_ops = 0;
    n.rank_share = 0;
    n.one_rank = false;
    n.ops = ops;
    n.mean_late_s = 0;
    n.wait_per_min_s = 0;
    n.share = 0;
    n.look = s.look;
    n.streak = 0;
    if (n.named) {
      n.named = false;
      changes.push_back({shim, false, n});
    }
  }
  for (const auto& [shim, t] : tally) {
    SlowNode& n = nodes_[shim];
    n.shim = shim;
    n.rank = -1;
    int most = 0;
    for (const auto& [rank, k] : t.last)
      if (k > most) n.rank = rank, most = k;
    n.rank_share = t.late ? static_cast<double>(most) / t.late : 0;
    n.one_rank = ranks_per_node_ >= 2 && n.rank_share >= kOneRankShare;
    n.late_ops = t.late;
    n.ops = ops;
    n.mean_late_s = t.late ? static_cast<double>(t.late_us) / 1e6 / t.late : 0;
    n.wait_per_min_s = 60 * t.wait_frac;
    n.look = s.look;
    n.share = static_cast<double>(t.counted_us) /
              static_cast<double>(std::max<int64_t>(1, all_counted_us));
    const bool steady = 2 * t.late >= ops;
    const bool slow = n.share >= kWaitShare && (steady ? t.wait_frac : t.beyond_frac) >= kLateFrac;
    n.streak = slow ? n.streak + 1 : 0;
    if (slow && !n.named && n.streak >= looks_) {
      n.named = true;
      n.named_rank = n.one_rank ? n.rank : -1;
      if (n.named_look < 0) n.named_look = looks_done_;
      changes.push_back({shim, true, n});
    } else if (!slow && n.named) {
      n.named = false;
      changes.push_back({shim, false, n});
    }
  }
  // Only the late and the named are kept: the map stays small.
  for (auto it = nodes_.begin(); it != nodes_.end();)
    it = it->second.late_ops == 0 && !it->second.named ? nodes_.erase(it) : std::next(it);
  return changes;
}

void StragglerJudge::NewAttempt() {
  last_seq_.clear();
  full_.clear();
  for (auto& [shim, n] : nodes_) n.streak = 0;
}

std::string SlowLine(const SlowNode& n, const std::string& host) {
  const std::string late = std::to_string(n.late_ops) + " of " + std::to_string(n.ops) +
                           " collectives last, " + FormatNumber(n.mean_late_s, "%.3f") +
                           " s late on average";
  const std::string waits = FormatNumber(100 * n.share, "%.0f") +
                            " % of the job's waiting); the job waits " +
                            FormatNumber(n.wait_per_min_s, "%.1f") + " s per minute for it (" +
                            std::to_string(n.streak) + " looks in a row)";
  if (n.one_rank)
    return "rank " + std::to_string(n.rank) + " on " + EscapeControl(host) + " (shim " +
           std::to_string(n.shim) + ") is late: it entered " + late + " (the last of its node's ranks in " +
           FormatNumber(100 * n.rank_share, "%.0f") + " % of them; " + waits +
           ": its own work (logging, an uneven split of the data) or its GPU, which aml-shim "
           "cannot tell apart; its node's other ranks are not the cause";
  return EscapeControl(host) + " (shim " + std::to_string(n.shim) + ") is slow: its ranks entered " +
         late + " (rank " + std::to_string(n.rank) + " last; " + waits;
}

std::string ClearedLine(const SlowNode& n, const std::string& host) {
  const std::string who = n.named_rank >= 0 ? "rank " + std::to_string(n.named_rank) + " on " +
                                                  EscapeControl(host) + " (shim " +
                                                  std::to_string(n.shim) + ") is no longer late"
                                            : EscapeControl(host) + " (shim " +
                                                  std::to_string(n.shim) + ") is no longer slow";
  return who + ": late in " + std::to_string(n.late_ops) + " of " + std::to_string(n.ops) +
         " collectives of the last look";
}

std::string SlowJson(const SlowNode& n, const std::string& host) {
  JsonWriter j;
  j.BeginObject();
  j.Key("host").String(host).Key("shim").Int(n.shim).Key("rank").Int(n.rank);
  j.Key("late_collectives").Int(n.late_ops).Key("collectives").Int(n.ops);
  j.Key("mean_late_s").Number(n.mean_late_s).Key("wait_s_per_min").Number(n.wait_per_min_s);
  j.Key("wait_share").Number(n.share);
  j.Key("one_rank").Bool(n.one_rank).Key("rank_share").Number(n.rank_share);
  j.Key("looks").Int(n.streak);
  j.EndObject();
  return j.str();
}

}  // namespace aml
