#include "shim/control/pace/clock_offset.h"

#include <cmath>

namespace aml {

void ClockOffset::Exchange(double t1, double t2, double t3, double t4) {
  const double delay = (t4 - t1) - (t3 - t2);
  if (!std::isfinite(delay) || delay < 0 || t3 < t2 || t4 < t1 || t1 <= 0 || t2 <= 0) return;
  Sample s;
  s.offset = ((t2 - t1) + (t3 - t4)) / 2;
  s.delay = delay;
  ring_[next_] = s;
  next_ = (next_ + 1) % kWindow;
  if (n_ < kWindow) ++n_;
}

const ClockOffset::Sample* ClockOffset::Best() const {
  const Sample* best = nullptr;
  for (int k = 0; k < n_; ++k)
    if (!best || ring_[k].delay < best->delay) best = &ring_[k];
  return best;
}

double ClockOffset::offset() const {
  const Sample* b = Best();
  return b ? b->offset : 0;
}

double ClockOffset::bound() const {
  const Sample* b = Best();
  return b ? b->delay / 2 : 0;
}

RootClock ComposeRootClock(const ClockOffset& to_parent, const RootClock& parent_to_root) {
  RootClock r;
  if (!to_parent.known() || !parent_to_root.known) return r;
  r.known = true;
  r.offset = to_parent.offset() + parent_to_root.offset;
  r.bound = to_parent.bound() + parent_to_root.bound;
  return r;
}

}  // namespace aml
