// The straggler check's looks as they go up the tree (docs/control-plane.md,
// "Slow nodes"): a shim that begins look N (the root every --straggler-check,
// the others when its order comes down) waits for its own node's part and
// each child's, merges them (shim/control/pace/pace_sample.h) and sends one part
// up; a child lost, or one that has not answered by the deadline, is left
// out (the deadline shrinks with the shim's level, so that what a level
// waited for reaches the one above in time). A part that comes after its
// look went up is dropped and counted.
#pragma once

#include <functional>
#include <set>
#include <vector>

#include "shim/control/pace/pace_sample.h"

namespace aml {

class PaceRelay {
 public:
  void Begin(int64_t look, const std::vector<int>& children, double deadline);
  void Own(int64_t look, const PaceSample& part);
  void FromChild(int child, int64_t look, const PaceSample& part);
  // Every part came (a child `keeps` says is gone is not waited for), or
  // the deadline passed.
  bool Ready(double now, const std::function<bool(int)>& keeps) const;
  // The merged look; it ends here.
  PaceSample Take();

  bool active() const { return active_; }
  double deadline() const { return deadline_; }
  int64_t dropped() const { return dropped_; }

 private:
  bool active_ = false, own_ = false;
  double deadline_ = 0;
  std::set<int> waiting_;
  PaceSample merged_;
  int64_t dropped_ = 0;
};

}  // namespace aml
