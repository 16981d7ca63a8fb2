// When a silent link is a lost shim (docs/control-plane.md, "Control plane"): the
// rule the overlay applies to its parent and to each child, the same in the
// real overlay (plane.h) and in the simulator's (sim/).
//
// Every frame counts as a sign of life (the heartbeat comes every 0.25 s to
// 1 s). A link may stay silent kMaxSilenceS during start-up (thousands of
// shims starting ranks on a few cores are slow to beat), then kGapFactor
// times the longest recent gap between its frames, kMinSilenceS at least: a
// frozen shim or a cut link is found within 5 s of a steady job, while a
// link whose beats come late now and then (a loaded node) is given the
// room it has shown it needs, up to kMaxSilenceS.
#pragma once

namespace aml {

constexpr double kMinSilenceS = 5;   // a steady link's allowance, at least
constexpr double kMaxSilenceS = 30;  // and at most (and at start-up)
constexpr double kGapFactor = 4;     // times its longest recent gap
constexpr double kGapDecay = 0.9;    // per frame: a past spike fades

struct Liveness {
  double last_heard = 0;
  double max_gap = 0;  // the longest recent gap between its frames (decays)

  void Start(double now) {
    last_heard = now;
    max_gap = 0;
  }
  void Heard(double now);
  // How long it may stay silent now; start-up lasts until `startup_until`.
  double Allowance(double now, double startup_until) const;
  // When its silence makes it lost.
  double LostAt(double now, double startup_until) const {
    return last_heard + Allowance(now, startup_until);
  }
};

}  // namespace aml
