// The oracle's facts of a fault plan (oracle_seer.h): per shim, in the tree
// that holds the job, when it dies, freezes, is cut off, fails or is
// signalled; and the names of the kinds of events.
#include "shim/sim/oracle_seer.h"

namespace aml {
namespace seer {

double Split(const World& w, int a, int b) {
  double t = kInf;
  for (const auto& [at, in] : w.partitions)
    if (in[a] != in[b]) t = std::min(t, at);
  return t;
}

int FaultShim(const Fault& f, int root, double root_since) {
  if (f.shim != Fault::kRoot) return f.shim;
  return f.at_s >= root_since ? root : -1;
}

World Facts(const FaultPlan& p, const OracleSetup& o, int root, const std::vector<int>& parent,
            const std::set<int>& relinked, double since, double root_since) {
  World w;
  w.n = static_cast<int>(parent.size());
  w.root = root;
  w.parent = parent;
  w.relinked = relinked;
  w.root_since = root_since;
  w.kids.resize(w.n);
  w.height.assign(w.n, 0);
  w.dead_at.assign(w.n, kInf);
  w.frozen_at.assign(w.n, kInf);
  w.cut_at.assign(w.n, kInf);
  w.cutoff.assign(w.n, kInf);
  w.inner.assign(w.n, kInf);
  w.signal_at.assign(w.n, kInf);
  w.first_fail.assign(w.n, kInf);
  w.unfit_at.assign(w.n, kInf);
  w.fails.assign(w.n, false);
  w.stubborn.assign(w.n, false);
  // Children in the order they linked (the join's, then those relinked).
  std::vector<int> joined = o.join_order;
  if (static_cast<int>(joined.size()) != w.n - 1) {
    joined.clear();
    for (int s = 1; s < w.n; ++s) joined.push_back(s);
  }
  for (int s : joined)
    if (s >= 0 && s < w.n && w.In(s) && parent[s] >= 0 && !relinked.count(s))
      w.kids[parent[s]].push_back(s);
  for (int s : relinked)
    if (w.In(s)) w.kids[parent[s]].push_back(s);
  std::vector<int> stragglers;
  for (const Fault& f : p.faults) {
    const int at = FaultShim(f, root, root_since);
    switch (f.kind) {
      case FaultKind::kFreeze:
        if (at < 0) break;
        w.frozen_at[at] = std::min(w.frozen_at[at], f.at_s);
        [[fallthrough]];
      case FaultKind::kKill:
        if (at < 0) break;
        w.dead_at[at] = std::min(w.dead_at[at], f.at_s);
        break;
      case FaultKind::kCut:
        if (relinked.count(f.shim) && f.at_s < since) break;
        w.cut_at[f.shim] = std::min(w.cut_at[f.shim], f.at_s);
        break;
      case FaultKind::kPartition: {
        std::vector<bool> in(w.n, false);
        for (int s : f.group) in[s] = true;
        w.partitions.emplace_back(f.at_s, in);
        for (int s = 0; s < w.n; ++s)
          if (parent[s] >= 0 && in[s] != in[parent[s]])
            w.cut_at[s] = std::min(w.cut_at[s], f.at_s);
        break;
      }
      case FaultKind::kSigterm:
        w.signal_at[f.shim] = std::min(w.signal_at[f.shim], f.at_s);
        w.any_signal = true;
        break;
      case FaultKind::kFail:
        w.first_fail[f.shim] = std::min(w.first_fail[f.shim], f.at_s);
        w.fails[f.shim] = true;
        break;
      case FaultKind::kStubbornRanks:
        w.stubborn[f.shim] = true;
        break;
      case FaultKind::kStraggler:
        stragglers.push_back(f.shim);
        break;
      case FaultKind::kUnfit:
        w.unfit_at[f.shim] = std::min(w.unfit_at[f.shim], f.at_s);
        break;
      default:
        break;
    }
  }
  for (int s : stragglers)
    w.drain_s = std::max(w.drain_s, w.stubborn[s] ? std::min(o.grace_s, 2.0) : o.term_s);
  // Parents come before their children: one pass down, one up.
  std::vector<int> order, depth(w.n, 0);
  order.push_back(root);
  for (size_t i = 0; i < order.size(); ++i)
    for (int c : w.kids[order[i]]) {
      order.push_back(c);
      depth[c] = depth[order[i]] + 1;
      w.max_depth = std::max(w.max_depth, depth[c]);
    }
  for (int s = 0; s < w.n; ++s)
    if (!w.In(s)) w.cutoff[s] = -1;  // outside: never reached
  for (int s : order)
    if (s != root)
      w.cutoff[s] = std::min({w.cutoff[w.parent[s]], w.dead_at[w.parent[s]], w.cut_at[s]});
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int s = *it;
    for (int c : w.kids[s]) {
      w.inner[s] = std::min({w.inner[s], w.dead_at[c], w.cut_at[c], w.inner[c]});
      w.height[s] = std::max(w.height[s], w.height[c] + 1);
    }
  }
  return w;
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kFail: return "failure";
    case Kind::kLoss: return "loss";
    case Kind::kSignal: return "signal";
    case Kind::kHang: return "hang";
    case Kind::kEnd: return "healthy end";
    case Kind::kEndingTimeout: return "restart round timed out";
    case Kind::kVerdict: return "verdict";
    case Kind::kCollected: return "roll-call";
    case Kind::kRestarted: return "restart";
    case Kind::kRootLost: return "the root's loss";
  }
  return "?";
}

World Facts(const FaultPlan& p, const OracleSetup& o) { return Facts(p, o, 0, o.parent); }

}  // namespace seer
}  // namespace aml
