// The job's state machine (job_machine.h): what the straggler check's
// verdicts cost a node (docs/control-plane.md, "Slow nodes"). Every
// --straggler-check the check (straggler_check.h) takes a look through the
// tree and, at the root, judges it and names a slow node in one line; with
// --retire-slow the job machine retires it: the attempt ends and a spare
// takes its place, as for a failure.
#include "shim/control/job_machine.h"

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
  straggler_.Judge(s, c_.size - static_cast<int>(gone_.size()), HostFn(),
                   [this, now](const SlowNode& n) {
                     RetireSlow(n, now);
                     return state_ == JobState::kRunning;
                   });
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
  straggler_.Forget(n.shim);
  if (!spare) return;
  const std::string what = ShimName(n.shim, host) + " was slow and retired (--retire-slow)";
  AttemptRecord a = attempts_.New(ports_->WallNow());
  a.exit_code = 125;
  a.what = EscapeControl(what);
  EndAttempt(std::move(a),
             Msg("stop").Set("kind", std::string("slow")).Set("code", 125).Set("what", what),
             StopOrder::Of(125, "aml-shim: " + EscapeControl(what) + ": ending the job\n", ""),
             "aml-shim: " + EscapeControl(what) + "\n", false, now);
}

}  // namespace aml
