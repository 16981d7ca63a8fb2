#include "shim/control/straggler_looks.h"

#include <algorithm>
#include <limits>

#include "shim/control/job_machine.h"
#include "shim/control/pace/pace_sample.h"

namespace aml {

void StragglerLooks::FromParent(const Msg& m, double now) {
  Begin(m.Int("look"), static_cast<int>(m.Int("lv", 0)), now);
}

void StragglerLooks::FromChild(int child, const Msg& m, double now) {
  if (const JsonValue* raw = m.Raw("s")) {
    if (auto part = PaceFrom(*raw); part.ok()) relay_.FromChild(child, m.Int("look"), *part);
  }
  Finish(now);
}

// Look `look` begins at this shim (`level` below the root): the children
// are told, the node's machine is ordered to read its ranks' records, and
// the parts are awaited until the look's deadline: the records'
// --dump-timeout and a second more, or 60 % of --straggler-check when that
// is shorter (the next look is due), and half a second for each level
// below this one (a level's parts reach the one above before its own).
void StragglerLooks::Begin(int64_t look, int level, double now) {
  if (relay_.active()) Finish(std::numeric_limits<double>::infinity());  // what it has
  const double below = std::max(0, links_->LevelsBelow(level));
  const double wait = std::min(dump_timeout_s_ + 1, 0.6 * every_s_);
  relay_.Begin(look, links_->LiveChildren(), now + wait + 0.5 * below);
  links_->SendDown(Msg("pace").Set("look", look).Set("lv", level + 1).Encode());
  machine_->OrderPaceLook(look);
}

void StragglerLooks::Own(int64_t look, const std::vector<RankTimes>& times, double now) {
  // A clock not yet known to the root's gives no times: nothing to compare.
  const RootClock clock = links_->Clock();
  PaceSample part;
  part.look = look;
  part.shims = 1;
  if (clock.known) part = LocalPace(rank_, look, times, clock.offset, clock.bound);
  relay_.Own(look, part);
  Finish(now);
}

void StragglerLooks::Finish(double now) {
  if (!relay_.Ready(now, [this](int c) { return links_->Keeps(c); })) return;
  PaceSample s = relay_.Take();
  ++sent_;
  if (machine_->root()) machine_->OnPaceSample(s, now);
  else links_->SendUp(Msg("pace").Set("look", s.look).SetRaw("s", PaceJson(s)).Encode());
}

void StragglerLooks::OnTimer(double now, bool go) {
  if (relay_.active()) Finish(now);
  // The root's look, every --straggler-check while an attempt runs.
  if (go && every_s_ > 0 && machine_->root() && now >= next_) {
    next_ = now + every_s_;
    if (machine_->state() == JobState::kRunning) Begin(++begun_, 0, now);
  }
}

double StragglerLooks::NextDeadline(double next, bool go) const {
  if (relay_.active()) next = std::min(next, relay_.deadline());
  if (go && every_s_ > 0 && machine_->root()) next = std::min(next, next_);
  return next;
}

}  // namespace aml
