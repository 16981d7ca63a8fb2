// A root that comes back learns before it acts (docs/control-plane.md, "A
// root that comes back"). A root whose loop ran nothing for kGapS (SIGSTOP
// and SIGCONT, a hypervisor's pause, a node descheduled for seconds) may
// have lost the job meanwhile: its children found it silent and left for
// its heir, which may hold the job now. What waited in its links is old
// news (a failure, a loss, a word of an attempt that is over), and acting
// on it (a halt, a restart, a retirement) would make two roots. So from its
// wake the job's words from below, the losses of its links and its own
// timers wait here, while its links are read as ever (the heir's "left"
// makes it step down at once), until it has heard, after what waited in
// its links was read (kFreshS), a beat sent after it woke (the beat's own
// send time, within kSkewS of this node's clock: a link that heals delivers
// old beats late), from more than half of the job's shims (a
// child counts with the shims below it), or from every child it still has
// when it lost none since:
// then what waited is handed to the job in order. Heard from neither within
// kConfirmS (a steady child's allowance: its children beat every second at
// most, and one that stayed beats), it holds the job no more: it steps
// down, and what waited is dropped (a root frozen and cut off, whose link
// heals later, is gone by then).
#pragma once

#include <deque>
#include <functional>

namespace aml {

class WakeGate {
 public:
  static constexpr double kGapS = 3;        // no round for this long: a pause
  static constexpr double kFreshS = 0.5;    // what came before this after the wake: the backlog
  static constexpr double kConfirmS = 5;    // held this long at most (kMinSilenceS)
  static constexpr double kSkewS = 1;       // the nodes' clocks agree within this

  // The loop ran at `now` (a read or a timer); `armed`: this shim holds the
  // job (the root, once the job started). True when it just woke.
  // `wall`: this node's clock (CLOCK_REALTIME) now.
  bool Ran(double now, double wall, bool armed) {
    const bool woke = armed && last_ >= 0 && now - last_ > kGapS && !held();
    if (woke) {
      woke_at_ = now;
      woke_wall_ = wall;
      paused_s_ = now - last_;
    }
    last_ = now;
    return woke;
  }
  bool held() const { return woke_at_ >= 0; }
  double paused_s() const { return paused_s_; }
  // Heard at `at` (this loop's clock), a beat sent at `sent` (the sender's
  // clock; -1: none yet): after the backlog was read, and sent since it woke.
  bool Fresh(double at, double sent) const {
    return at >= woke_at_ + kFreshS && sent >= woke_wall_ - kSkewS;
  }
  // When, unconfirmed, it steps down.
  double Deadline() const { return woke_at_ + kConfirmS; }
  void Hold(std::function<void(double)> call) { held_.push_back(std::move(call)); }
  // A link lost since the wake (its loss held).
  void NoteLoss() { lost_ = true; }
  bool lost() const { return lost_; }
  // What was held, dropped (it stepped down).
  void Drop() {
    woke_at_ = -1;
    lost_ = false;
    held_.clear();
  }
  // What was held, handed on in order (`now`: the time it is handed).
  void Release(double now) {
    woke_at_ = -1;
    lost_ = false;
    while (!held_.empty()) {
      auto call = std::move(held_.front());
      held_.pop_front();
      call(now);
    }
  }

 private:
  double last_ = -1, woke_at_ = -1, woke_wall_ = 0, paused_s_ = 0;
  bool lost_ = false;
  std::deque<std::function<void(double)>> held_;
};

}  // namespace aml
