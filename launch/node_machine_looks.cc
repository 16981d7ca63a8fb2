// The node's machine (node_machine.h), its looks while the ranks write
// nothing (docs/control-plane.md, "Hang watchdog" and "Slow nodes"): the
// ranks' flight records read every look_every_s (collectives completed are
// activity, as output is; the straggler check's entry times), and the
// starting ranks' CPU time read on its own cadence.
#include "launch/node_machine.h"

#include <algorithm>
#include <limits>

namespace aml {

// When the next look is due: its ranks silent for look_every_s, and that
// long since the last look (never while anything else is under way).
double NodeMachine::NextLook() const {
  if (c_.look_every_s <= 0 || state_ != NodeState::kRunning || stacks_ != StackPhase::kNone ||
      !AnyRunning())
    return std::numeric_limits<double>::infinity();
  return std::max(last_output_, last_look_) + c_.look_every_s;
}

// The straggler check's look: the ranks' records are read now (a look
// under way serves it); a node with no rank running, or busy ending them or
// reading stacks, answers at once with nothing (its parent does not wait).
void NodeMachine::PaceLook(int64_t look, double now) {
  if (pace_look_ >= 0) AnswerPace(nullptr);  // the one before was never done
  pace_look_ = look;
  if (state_ != NodeState::kRunning || stacks_ != StackPhase::kNone || recording_ ||
      !AnyRunning()) {
    AnswerPace(nullptr);
    return;
  }
  if (!looking_) {
    looking_ = true;
    last_look_ = now;
    procs_->StartDumps(now, NodeProcs::DumpAsk::kLook);
  }
  Look(now);
}

void NodeMachine::AnswerPace(const std::vector<RankTimes>* times) {
  if (pace_look_ < 0) return;
  const int64_t look = pace_look_;
  pace_look_ = -1;
  if (times) ++pace_looks_;
  if (job_) job_->OnPace(look, times ? *times : std::vector<RankTimes>{});
}

// A look due is started; one whose records came says whether any rank
// completed a collective since the last: activity, as output is.
void NodeMachine::Look(double now) {
  if (!looking_ && now >= NextLook()) {
    looking_ = true;
    last_look_ = now;
    procs_->StartDumps(now, NodeProcs::DumpAsk::kLook);
  }
  if (looking_) {
    if (state_ != NodeState::kRunning || stacks_ != StackPhase::kNone) {
      looking_ = false;  // overtaken: the attempt ends, or the stacks are asked for
      AnswerPace(nullptr);
      return;
    }
    if (!procs_->DumpsDone(now)) return;
    looking_ = false;
    const DumpResult came = procs_->Dumps();
    AnswerPace(&came.times);
    const bool advanced =
        came.answered > 0 && last_progress_ >= 0 && came.progress > last_progress_;
    if (came.answered > 0) last_progress_ = came.progress;
    if (advanced) {
      last_output_ = now;
      if (job_) job_->OnOutput(now);
    }
  }
}

// The starting ranks' CPU time, read every look_every_s of the attempt's
// first kStartCpuLooks looks, whatever a look's dumps are doing.
double NodeMachine::NextCpuLook() const {
  // None starting at the last reading: none will (a rank past its start
  // never starts again), and none is read again.
  const bool none = std::none_of(starting_cpu_.begin(), starting_cpu_.end(),
                                 [](double cpu) { return cpu >= 0; });
  if (c_.look_every_s <= 0 || none || state_ != NodeState::kRunning ||
      stacks_ != StackPhase::kNone || !AnyRunning())
    return std::numeric_limits<double>::infinity();
  const double next = starting_at_ + c_.look_every_s;
  return next < attempt_start_ + kStartCpuLooks * c_.look_every_s
             ? next
             : std::numeric_limits<double>::infinity();
}

// Ranks still starting whose CPU time grew since the last reading: activity
// (node_machine.h). Only the ranks starting at both readings count: one that
// entered a collective meanwhile takes its CPU time out of the sum, which
// must not hide the others'.
void NodeMachine::CpuLook(double now) {
  if (now < NextCpuLook()) return;
  std::vector<double> cpu(ranks_.size(), -1);
  double grew = 0;
  for (const NodeProcs::RankCpu& r : procs_->StartingCpu()) {
    if (r.child >= cpu.size()) continue;
    cpu[r.child] = r.cpu_s;
    if (starting_cpu_[r.child] >= 0) grew += std::max(0.0, r.cpu_s - starting_cpu_[r.child]);
  }
  const bool started = grew >= kStartCpuShare * (now - starting_at_) && grew > 0;
  starting_cpu_ = std::move(cpu);
  starting_at_ = now;
  if (started) {
    last_output_ = now;
    if (job_) job_->OnOutput(now);
  }
}

}  // namespace aml
