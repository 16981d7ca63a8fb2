// What the real code's state must be at a simulated run's end (sim_world.h),
// beside what the oracle foresaw (sim_check.h): every shim's machine, the
// rosters of the restarts, the timings recorded for the bench.
#include "shim/sim/sim_world.h"

namespace aml {
namespace simw {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// Faults that end (fault_plan.h "~D"): a root that wakes or whose link
// heals learns before it acts. Checked whatever the timing:
//   - one root acts in each term (a verdict, a restart), and none of an
//     older term acts on the job (a halt, a roll-call, a restart, a
//     verdict) once a newer term's root acted: it learns before it acts;
//   - every shim ended (a thawed one too), none made more restarts than
//     --max-restarts (checked as it went);
//   - the shared log dir's failure.json is true of the job: the job's root
//     at the end ended well and it says so, or none stands; it failed and
//     the record is not a holder's that says it ended well, nor one of an
//     older term than the last root's.
void Cluster::CheckFaultsThatEnd() {
  for (const auto& [term, roots] : acted_)
    if (roots.size() > 1) {
      std::string list;
      for (int r : roots) list += (list.empty() ? "" : ", ") + std::to_string(r);
      return Violate("shims " + list + " each acted as the root in term " + std::to_string(term));
    }
  for (const Act& a : acts_)
    for (const auto& [newer, began] : term_began_)
      if (newer > a.term && began < a.at)
        return Violate("shim " + std::to_string(a.shim) + ", a root of term " +
                       std::to_string(a.term) + ", said '" + a.type + "' to the job at " +
                       FormatNumber(a.at - root_go_, "%.3f") + " s, after the root of term " +
                       std::to_string(newer) + " acted at " +
                       FormatNumber(began - root_go_, "%.3f") + " s");
  const Shim& root = *shims_[static_cast<size_t>(job_root_)];
  if (!root.exited || root.exit_code == 143) return;  // the launcher's word
  if (shared_record_.empty()) {
    if (root.machine().term() > 1 && root.exit_code == 0)
      Violate("the job ended well under a new root (term " +
              std::to_string(root.machine().term()) +
              ") and the shared log dir holds no word of it");
    return;
  }
  auto j = ParseJson(shared_record_);
  const JsonValue* code = j.ok() ? j->Find("exit_code") : nullptr;
  const int said = code ? std::atoi(code->text.c_str()) : -1;
  const RecordStamp stamp = StampOf(shared_record_);
  if (root.exit_code == 0 && said != 0)
    return Violate("the job ended well (shim " + std::to_string(job_root_) +
                   ", its root, exited 0) and the shared log dir's failure.json says exit_code " +
                   std::to_string(said) + " (written by " + stamp.writer + " in term " +
                   std::to_string(stamp.term) + ")");
  if (root.exit_code != 0 && said == 0)
    return Violate("the job failed (its root exited " + std::to_string(root.exit_code) +
                   ") and the shared log dir's failure.json says it ended well");
  if (stamp.holder && stamp.term < root.machine().term())
    Violate("the shared log dir's failure.json is of term " + std::to_string(stamp.term) +
            " (" + stamp.writer + "), older than the job's last root's, " +
            std::to_string(root.machine().term()));
}

void Cluster::Check(SimResult* r) {
  const Shim& root = *shims_[static_cast<size_t>(job_root_)];
  record_.root = job_root_;
  r->join_s = go_all_;
  for (const auto& s : shims_) r->depth = std::max(r->depth, s->tree.depth());
  r->restarts = root.restart_orders;
  for (const auto& [shim, n] : root.machine().straggler().judge().nodes())
    if (n.named_look >= 0)
      r->named += (r->named.empty() ? "" : ",") + std::to_string(shim) + "@look" +
                  std::to_string(n.named_look);
  r->pace_looks = root.machine().straggler().judge().looks();
  r->pace_part_bytes = record_.pace_bytes_max;
  r->rank0_msgs = root.handled;
  r->rank0_bytes = root.bytes;
  r->exit_code = root.exit_code;
  std::vector<double> stops;
  double last_restart = -1, end = 0;
  for (const auto& sp : shims_) {
    const Shim& s = *sp;
    r->msgs_max_per_shim = std::max(r->msgs_max_per_shim, s.handled);
    for (const std::string& move : s.machine().stray_moves())
      Violate("shim " + std::to_string(s.id()) + " moved " + move +
              ", a move the job's table lacks (shim/control/job_states.cc)");
    if (dead_.count(s.id())) continue;
    if (!s.exited) {
      if (std::getenv("AML_SIM_DEBUG")) {  // where it waits, and for whom
        std::fprintf(stderr, "never ended: shim %d, job %s, node %s, parent %d, children:", s.id(),
                     JobStateName(s.machine().state()), NodeStateName(s.node.state()), s.parent());
        for (int c : s.tree.children())
          std::fprintf(stderr, " %d%s", c, s.tree.Keeps(c) ? "" : " (done or lost)");
        std::fprintf(stderr, "\n");
      }
      Violate("shim " + std::to_string(s.id()) + " never ended (state " +
              JobStateName(s.machine().state()) + " at " + FormatNumber(o_.limit_s, "%.0f") +
              " s)");
      continue;
    }
    end = std::max(end, s.exit_at);
    const double stopped = std::min(s.stop_order_at < 0 ? 1e18 : s.stop_order_at,
                                    s.end_order_at < 0 ? 1e18 : s.end_order_at);
    if (first_fail_ >= 0 && stopped < 1e18) stops.push_back(stopped - first_fail_);
    if (s.restart_order_at >= 0) last_restart = std::max(last_restart, s.restart_order_at);
    if (s.has_final && !s.final_order.attempts_json.empty() && !s.machine().root())
      Violate("shim " + std::to_string(s.id()) + " was given the job's record (failure.json)");
  }
  if (violation_.empty() && plan_.spares > 0) CheckRosters();
  // Faults that end: what must hold whatever the timing (below), not the
  // oracle's foreseen outcomes.
  if (violation_.empty() && plan_.Ends()) CheckFaultsThatEnd();
  // What must have happened (oracle.h), and what did.
  if (violation_.empty() && !plan_.Ends()) {
    OracleSetup setup;
    setup.grace_s = o_.grace_s;
    setup.beat_s = beat_s_;
    setup.hang_s = hang_s_;
    setup.startup_s = kStartupS;
    setup.term_s = SimProcs::kTermS;
    double cost = 0;
    for (const auto& sp : shims_) cost = std::max(cost, sp->cost_s);
    setup.slack_s = 0.2 + 4 * static_cast<double>(shims_.size()) * cost;
    // A busy shim answers up to a pause late (a word down the tree, at each
    // level, and one more below a new root), and its allowances for its
    // links grow with the gaps its pauses made (oracle.h).
    if (plan_.Busy()) {
      setup.busy_s = FaultPlan::kBusyPauseS;
      setup.slack_s += FaultPlan::kBusyPauseS * (planner_->depth() + 2);
    }
    // The tree as the join made it (a shim linked to a new root since has
    // another parent now).
    setup.parent = Parents();
    setup.join_order = join_order_;
    for (const auto& sp : shims_) {
      ShimRecord rec;
      rec.exited = sp->exited;
      rec.dead = dead_.count(sp->id()) > 0;
      rec.code = sp->exit_code;
      auto rel = [&](double t) { return t < 0 ? -1 : t - root_go_; };
      rec.exit_at = rel(sp->exit_at);
      rec.stop_at = rel(std::min(sp->stop_order_at < 0 ? 1e18 : sp->stop_order_at,
                                 sp->end_order_at < 0 ? 1e18 : sp->end_order_at));
      if (rec.stop_at > 1e17) rec.stop_at = -1;
      rec.verdict_at = rel(sp->stop_order_at);
      rec.signalled_at = rel(sp->signalled_at);
      record_.shims.push_back(rec);
    }
    record_.restarts = root.restart_orders;
    // The straggler check's verdicts (--faults pace): each node named, and
    // in which look.
    for (const auto& [shim, n] : root.machine().straggler().judge().nodes())
      if (n.named_look >= 0) record_.named[shim] = n.named_look;
    record_.pace_looks = root.machine().straggler().judge().looks();
    record_.has_final = root.has_final;
    if (root.has_final) record_.final_order = root.final_order;
    record_.first_failure_at = first_fail_ < 0 ? -1 : first_fail_ - root_go_;
    if (std::getenv("AML_SIM_EXPLAIN")) {
      // What rank 0 decided, and each shim's end, beside the foreseen outcomes.
      for (const auto& [at, frame] : record_.verdicts)
        std::fprintf(stderr, "rank 0 at %.3f s: %s\n", at, frame.substr(0, 300).c_str());
      if (root.has_final)
        std::fprintf(stderr, "rank 0's record: %s%s\n", root.final_order.message.c_str(),
                     root.final_order.trailer.c_str());
      for (size_t s = 0; s < record_.shims.size(); ++s)
        std::fprintf(stderr, "shim %zu: %s %d at %.3f s\n", s,
                     record_.shims[s].exited ? "exited" : "did not exit", record_.shims[s].code,
                     record_.shims[s].exit_at);
    }
    const std::string broken = CheckRun(plan_, setup, record_);
    if (!broken.empty()) Violate(broken);
  }
  r->end_s = end;
  r->stop_p99_s = Percentile(stops, 0.99);
  r->stop_max_s = stops.empty() ? -1 : *std::max_element(stops.begin(), stops.end());
  if (loss_at_ >= 0 && root.stop_order_at >= loss_at_) r->lost_detect_s = root.stop_order_at - loss_at_;
  // The roll-call is printed with the stop (or, restarts left, the end) it orders.
  if (root.collect_order_at >= 0) {
    double printed = 1e18;
    for (double t : {root.stop_order_at, root.end_order_at})
      if (t >= root.collect_order_at) printed = std::min(printed, t);
    if (printed < 1e18) r->rollcall_s = printed - root.collect_order_at;
  }
  if (first_fail_ >= 0 && last_restart >= 0) r->restart_round_s = last_restart - first_fail_;
  if (plan_.spares > 0) r->replace_s = ReplaceSeconds();
  if (job_root_ != 0) r->new_root = job_root_;
  if (!violation_.empty())
    r->invariants = violation_ + " (replay: " + Replay() + ")";
}

// --spares: each attempt runs exactly the world's ranks. Every restart
// order gives each NODE_RANK to one shim that is alive, that no earlier
// order dropped (retired) and that was not lost; a shim starts ranks only
// in an attempt whose order gives it a NODE_RANK (a spare or a retired
// shim starts none), and it starts them under the NODE_RANK it was given.
void Cluster::CheckRosters() {
  const int n = o_.shims, nodes = n - plan_.spares;
  std::vector<std::vector<int>> rosters(1);
  for (int s = 0; s < nodes; ++s) rosters[0].push_back(s);
  std::map<int, std::vector<std::vector<int>>> by_restart;  // restart n: its orders' rosters
  std::set<int> dropped;
  int64_t term = 1;
  for (const auto& [at, frame] : record_.verdicts) {
    auto m = Msg::Decode(frame);
    if (!m.ok() || m->type() != "restart") continue;
    // With faults that end, an old root's restarts in a part cut off
    // reached no one: a newer term's root retires from its own record.
    if (plan_.Ends() && m->Int("term", term) > term) {
      term = m->Int("term", term);
      dropped.clear();
    }
    const std::vector<int> holders = Roster::Decode(m->Str("nodes"));
    if (static_cast<int>(holders.size()) != nodes)
      return Violate("restart order at " + FormatNumber(at, "%.3f") + " s lists " +
                     std::to_string(holders.size()) + " NODE_RANKs, not " +
                     std::to_string(nodes));
    std::set<int> seen;
    for (int node = 0; node < nodes; ++node) {
      const int h = holders[static_cast<size_t>(node)];
      if (h < 0 || !seen.insert(h).second)
        return Violate("restart order at " + FormatNumber(at, "%.3f") + " s gives NODE_RANK " +
                       std::to_string(node) + " to " +
                       (h < 0 ? std::string("no shim") : "shim " + std::to_string(h) + " twice") +
                       " ('" + m->Str("nodes") + "')");
      if (dropped.count(h))
        return Violate("restart order at " + FormatNumber(at, "%.3f") + " s gives NODE_RANK " +
                       std::to_string(node) + " to shim " + std::to_string(h) +
                       ", retired before");
    }
    for (int h : rosters.back())
      if (!seen.count(h)) dropped.insert(h);
    // MASTER_ADDR moves with NODE_RANK 0 to where its new holder's node is
    // (the address rank 0's door saw it come from; "" on rank 0's node).
    const int h0 = holders[0];
    const std::string maddr = h0 == 0 || NodeAddr(h0) == NodeAddr(0) ? "" : NodeAddr(h0);
    if (m->Str("maddr") != maddr)
      return Violate("restart order at " + FormatNumber(at, "%.3f") + " s gives MASTER_ADDR '" +
                     m->Str("maddr") + "'; NODE_RANK 0's holder, shim " + std::to_string(h0) +
                     ", is at '" + maddr + "'");
    rosters.push_back(holders);
    by_restart[static_cast<int>(m->Int("n"))].push_back(holders);
  }
  // Each attempt's rosters: a new root's restart for an attempt whose old
  // root's restart reached no one (a partition cut it off first) is another
  // roster for the same attempt; a shim took one of them (seed 310398946).
  auto alts = [&](size_t attempt) {
    if (attempt == 0) return std::vector<std::vector<int>>{rosters[0]};
    auto it = by_restart.find(static_cast<int>(attempt));
    return it == by_restart.end() ? std::vector<std::vector<int>>{rosters.back()} : it->second;
  };
  auto maddr_of = [&](const std::vector<int>& r) {
    const int h0 = r[0];
    return h0 == 0 || NodeAddr(h0) == NodeAddr(0) ? std::string() : NodeAddr(h0);
  };
  for (const auto& sp : shims_) {
    const Shim& s = *sp;
    for (int a : s.procs.started_attempts) {
      if (a >= static_cast<int>(rosters.size())) continue;
      bool in = false;
      for (const std::vector<int>& r : alts(static_cast<size_t>(a)))
        in = in || std::find(r.begin(), r.end(), s.id()) != r.end();
      if (!in)
        return Violate("shim " + std::to_string(s.id()) + " started ranks in attempt " +
                       std::to_string(a + 1) + ", which gives it no NODE_RANK");
    }
    // Each restart order it took, by the restart's number (a shim cut off
    // for one takes the next: its k-th order need not be restart k).
    for (size_t k = 0; k < s.maddrs.size(); ++k) {
      const size_t restart = static_cast<size_t>(s.restart_ns[k]);
      if (restart >= rosters.size()) continue;
      const std::vector<std::vector<int>> rs = alts(restart);
      bool ok = false;
      for (const std::vector<int>& r : rs) ok = ok || s.maddrs[k] == maddr_of(r);
      if (!ok)
        return Violate("shim " + std::to_string(s.id()) + "'s ranks would get MASTER_ADDR '" +
                       s.maddrs[k] + "' in attempt " + std::to_string(restart + 1) + ", not '" +
                       maddr_of(rs.front()) + "'");
    }
    for (size_t k = 0; k < s.nodes.size(); ++k) {
      const std::vector<std::vector<int>> rs =
          alts(std::min(static_cast<size_t>(s.restart_ns[k]), rosters.size() - 1));
      bool ok = false;
      int want = -1;
      for (const std::vector<int>& r : rs) {
        const auto it = std::find(r.begin(), r.end(), s.id());
        want = it == r.end() ? -1 : static_cast<int>(it - r.begin());
        ok = ok || s.nodes[k] == want;
      }
      if (!ok)
        return Violate("shim " + std::to_string(s.id()) + " took NODE_RANK " +
                       std::to_string(s.nodes[k]) + " in attempt " +
                       std::to_string(s.restart_ns[k] + 1) +
                       "; its order gave it " + std::to_string(want));
    }
  }
  // The job's record: each attempt's NODE_RANKs' hosts as its order gave
  // them, and each retired shim under its host and the NODE_RANK it held.
  const Shim& root = *shims_[static_cast<size_t>(job_root_)];
  if (!root.has_final) return;
  auto attempts = ParseJson(root.final_order.attempts_json.empty() ? "[]"
                                                                    : root.final_order.attempts_json);
  if (attempts.ok())
    for (const JsonValue& a : attempts->items) {
      const JsonValue* number = a.Find("attempt");
      const JsonValue* hosts = a.Find("nodes");
      const int k = number ? std::atoi(number->text.c_str()) - 1 : -1;
      if (k < 0 || k >= static_cast<int>(rosters.size())) continue;
      std::string want, got;
      if (hosts)
        for (const JsonValue& v : hosts->items) got += (got.empty() ? "" : ",") + v.text;
      // (With faults that end, the attempt's roster may be a new root's,
      // the old root's restart of it having reached no one: alts.)
      bool any = false;
      for (const std::vector<int>& r :
           plan_.Ends() ? alts(static_cast<size_t>(k)) : std::vector<std::vector<int>>{rosters[static_cast<size_t>(k)]}) {
        std::string one;
        for (int h : r) one += (one.empty() ? "" : ",") + HostOf(h);
        if (want.empty()) want = one;
        any = any || one == got;
      }
      if (!any)
        return Violate("failure.json's attempt " + std::to_string(k + 1) + " lists its nodes as [" +
                       got.substr(0, 200) + "], not [" + want.substr(0, 200) + "]");
    }
  auto retired = ParseJson(root.final_order.retired_json.empty() ? "[]"
                                                                  : root.final_order.retired_json);
  if (retired.ok())
    for (const JsonValue& r : retired->items) {
      const JsonValue* shim = r.Find("shim");
      const JsonValue* host = r.Find("host");
      const JsonValue* node = r.Find("node");
      const JsonValue* attempt = r.Find("attempt");
      if (!shim) continue;
      const int id = std::atoi(shim->text.c_str());
      if (!host || host->text != HostOf(id))
        return Violate("failure.json retires shim " + std::to_string(id) + " under host '" +
                       (host ? host->text : "") + "', not '" + HostOf(id) + "'");
      const int k = attempt ? std::atoi(attempt->text.c_str()) - 1 : -1;
      if (node && node->kind == JsonValue::Kind::kNumber && k >= 0 &&
          k < static_cast<int>(rosters.size())) {
        const int at = std::atoi(node->text.c_str());
        const std::vector<int>& held = rosters[static_cast<size_t>(k)];
        if (at < 0 || at >= static_cast<int>(held.size()) || held[static_cast<size_t>(at)] != id)
          return Violate("failure.json retires shim " + std::to_string(id) + " from NODE_RANK " +
                         std::to_string(at) + " in attempt " + std::to_string(k + 1) +
                         ", which another held");
      }
    }
}

// --spares: from the failure (or loss) that led to the first restart that
// gives a NODE_RANK to a spare, to the last of that restart's holders
// taking its order (the ranks of the next attempt start at once): the
// tree's latency, the deciding window, and the back-off. -1: no spare took
// a place.

}  // namespace simw
}  // namespace aml
