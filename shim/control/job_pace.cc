// The job's state machine (job_machine.h): the straggler check's verdicts
// (docs/control-plane.md, "Slow nodes"). Every --straggler-check the
// overlay (tree_links.h) asks every node for a look and merges their parts
// up the tree; the root judges each look (shim/control/pace/straggler_judge.h),
// names a slow node in one line, and with --retire-slow retires it: the
// attempt ends and a spare takes its place, as for a failure.
#include "shim/control/job_machine.h"

#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/units.h"

namespace aml {

void JobMachine::OrderPaceLook(int64_t look) {
  PaceLookOrder o;
  o.look = look;
  Order(std::move(o));
}

void JobMachine::OnPaceSample(const PaceSample& s, double now) {
  if (!root_ || state_ != JobState::kRunning) return;
  const int64_t judged = judge_.judged();
  const std::vector<StragglerJudge::Change> changes =
      judge_.Look(s, c_.size - static_cast<int>(gone_.size()));
  if (GetVerbosity() == Verbosity::kVerbose) {
    size_t ops = 0;
    for (const PaceGroup& g : s.groups) ops += g.ops.size();
    std::string late;
    for (const auto& [shim, n] : judge_.nodes())
      if (n.look == s.look && n.late_ops > 0)
        late += "; " + ShimName(shim, HostOf(shim)) + " late in " + std::to_string(n.late_ops) +
                " (" + std::to_string(n.streak) + " looks in a row)";
    LogVerbose("straggler look " + std::to_string(s.look) + ": " + std::to_string(s.shims) +
               " shims' parts, " + std::to_string(ops) + " collectives, " +
               std::to_string(judge_.judged() - judged) + " judged" + late);
  }
  // A check that can judge nothing says so once: the ranks' records carry
  // no entry times (a torch with no recorder), or no collective ran.
  if (!pace_blind_said_ && judge_.looks() >= judge_.looks_needed() && judge_.judged() == 0) {
    pace_blind_said_ = true;
    LogWarning("--straggler-check: " + std::to_string(judge_.looks()) +
               " looks found no collective that every node's ranks completed to compare (no "
               "flight record with entry times came: PyTorch 2.6 or newer keeps one, with "
               "--flight-recorder auto; or the ranks ran no collective): no node can be named");
  }
  for (const StragglerJudge::Change& c : changes) {
    const SlowNode& n = c.node;
    const std::string host = HostOf(c.shim);
    if (!c.named) {
      LogInfo(ClearedLine(n, host));
      continue;
    }
    LogWarning(SlowLine(n, host));
    RetireSlow(n, now);
    if (state_ != JobState::kRunning) return;
  }
}

// --retire-slow: the node named is retired and the attempt ends, as for a
// failure; its NODE_RANK goes to a spare at the restart (or the job ends:
// no spare left, or no restart left).
// A NODE_RANK whose new holder is named slow again is not retired twice:
// its slowness follows its ranks (their share of the work: rank 0's
// logging, an uneven split), not the node; the node retired for it is
// given back as a spare. A lateness that is one rank's (straggler_judge.h)
// is said so first: retiring its node is the test of which it is.
void JobMachine::RetireSlow(const SlowNode& n, double now) {
  if (!c_.retire_slow || !roster_ || roster_->Retired(n.shim) || roster_->NodeOf(n.shim) < 0)
    return;
  const int node_rank = roster_->NodeOf(n.shim);
  const std::string host = HostOf(n.shim);
  const std::string node = "NODE_RANK " + std::to_string(node_rank);
  if (const Retirement* before = roster_->SlowRetirement(node_rank)) {
    LogWarning("--retire-slow: " + ShimName(n.shim, host) + " holds " + node +
               ", whose last holder was retired as slow too: the slowness follows its ranks' "
               "work, not the node; not retired");
    const int old = before->shim;
    const std::string why = node + "'s lateness followed its ranks to " +
                            ShimName(n.shim, host) + " (their own work, not the node)";
    if (!gone_.count(old) && roster_->GiveBack(old, why))
      LogWarning("--retire-slow: " + ShimName(old, HostOf(old)) +
                 ", retired as slow, is given back as a spare: " + why);
    return;
  }
  if (n.one_rank)
    LogWarning("--retire-slow: the lateness is rank " + std::to_string(n.rank) +
               "'s alone: retiring " + ShimName(n.shim, host) + " tells its node from its own "
               "work: should " + node + "'s next holder be late the same way, the work is the "
               "rank's, and " + EscapeControl(host) + " is given back as a spare");
  const std::string why = "its ranks entered " + std::to_string(n.late_ops) + " of " +
                          std::to_string(n.ops) + " collectives last in " +
                          std::to_string(n.streak) + " looks in a row (the job waited " +
                          FormatNumber(n.wait_per_min_s, "%.1f") + " s per minute for it)";
  const bool spare = RetireOrStop(n.shim, kSlowReason + why, now);
  judge_.Forget(n.shim);
  if (!spare) return;
  const std::string what = ShimName(n.shim, host) + " was slow and retired (--retire-slow)";
  AttemptRecord a = NewAttempt(ports_->WallNow());
  a.exit_code = 125;
  a.what = EscapeControl(what);
  EndAttempt(std::move(a),
             Msg("stop").Set("kind", std::string("slow")).Set("code", 125).Set("what", what),
             StopOrder::Of(125, "aml-shim: " + EscapeControl(what) + ": ending the job\n", ""),
             "aml-shim: " + EscapeControl(what) + "\n", false, now);
}

// failure.json's "slow": every node named and still slow ("" for none).
std::string JobMachine::SlowJson() const {
  std::string out;
  for (const auto& [shim, n] : judge_.nodes()) {
    if (!n.named) continue;
    out += (out.empty() ? "[" : ",") + aml::SlowJson(n, HostOf(shim));
  }
  return out.empty() ? "" : out + "]";
}

}  // namespace aml
