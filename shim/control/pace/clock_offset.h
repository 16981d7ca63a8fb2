// How far another host's clock is from this one's (docs/control-plane.md,
// "Slow nodes"): the control plane's heartbeats carry NTP's four times (a
// child's beat up says when it left; the parent's beat down says when that
// one came and when the answer left), and the exchange with the shortest
// round trip among the last kWindow gives the offset, with half its round
// trip as the bound: the true offset is within it whatever the paths' asymmetry.
#pragma once

#include <array>

namespace aml {

class ClockOffset {
 public:
  static constexpr int kWindow = 16;

  // t1: the beat left here (this host's CLOCK_REALTIME); t2: it came there,
  // t3: the answer left there (that host's); t4: it came here (this host's).
  // An exchange whose times contradict themselves is ignored.
  void Exchange(double t1, double t2, double t3, double t4);
  void Reset() { *this = ClockOffset(); }
  bool known() const { return n_ > 0; }
  // That clock minus this one: a time here plus offset() is that clock's.
  double offset() const;
  // Half the best round trip: the offset is right within this.
  double bound() const;

 private:
  struct Sample {
    double offset = 0, delay = 0;
  };
  const Sample* Best() const;
  std::array<Sample, kWindow> ring_{};
  int n_ = 0, next_ = 0;
};

// An offset to the root, through the tree: this host's to its parent
// composed with the parent's to the root (each a bound that adds).
struct RootClock {
  bool known = false;
  double offset = 0, bound = 0;
};
RootClock ComposeRootClock(const ClockOffset& to_parent, const RootClock& parent_to_root);

}  // namespace aml
