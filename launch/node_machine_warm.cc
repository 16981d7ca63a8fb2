// The node's machine (node_machine.h), --warm-restart's part
// (docs/control-plane.md, "Warm restarts"): each rank started from its
// standby at a restart when it has one, the next standbys due, made, and
// ended (the decisions: warm_slots.h).
#include "launch/node_machine.h"

#include "shim/base/log.h"

namespace aml {

// Rank `i` of an attempt started (`restart`: null for the first); with
// --warm-restart, a restart's rank from its standby when it has one, and
// its next standby due.
bool NodeMachine::StartRank(size_t i, const RestartOrder* restart, double now, int* code) {
  WarmStart warm;
  WarmStart* w = c_.warm && restart ? &warm : nullptr;
  if (w) warm.from_standby = warm_.Take(i, &warm.cold);
  if (!procs_->Start(i, restart, w, code)) return false;
  if (w && warm.from_standby) warm_started_.push_back(i);
  else if (w) cold_started_.emplace_back(i, warm.cold);
  if (c_.warm) warm_.Due(i, true, now);  // the next restart's, as this one is under way
  return true;
}

// Every rank of the attempt started (none: a spare's wait): how many from
// their standbys, said; a spare keeps standbys too, ready as soon as it
// is (with --preload's modules: no rank of it ran yet): the place it takes
// starts warm.
void NodeMachine::StandbysAfterStart(bool restart, double now) {
  if (restart && !standby_) {
    LogInfo("--warm-restart: " + std::to_string(warm_started_.size()) + " of " +
            std::to_string(ranks_.size()) + " ranks started from their standbys");
    if (job_)
      job_->OnWarmStarts(static_cast<int>(warm_started_.size()),
                         static_cast<int>(cold_started_.size()));
  }
  for (size_t i = 0; i < ranks_.size() && standby_ && !retired_; ++i) warm_.Due(i, false, now);
}

// The standbys due are made. Once the shim is being stopped (a signal, the
// job's stop, its launcher or reader gone) no rank starts again: its
// standbys end, and none is made.
void NodeMachine::MakeStandbys(double now) {
  if (!c_.warm || state_ == NodeState::kDone) return;
  if (shim_signal_ || stop_ || launcher_gone_ || reader_gone_) return EndStandbys();
  for (size_t i : warm_.Ready(now)) {
    const std::string why = procs_->MakeStandby(i);
    if (why.empty()) warm_.Made(i);
    else warm_.Gone(i, why);
  }
}

void NodeMachine::EndStandbys() {
  for (size_t i : warm_.EndAll()) procs_->EndStandby(i);
}

}  // namespace aml
