// The straggler check's looks through the tree (docs/control-plane.md, "Slow
// nodes"), in one place: the root's timer (a look every --straggler-check
// while an attempt runs), each look's order down the tree, this node's part
// (its ranks' entry times against the root's clock), the children's parts
// merged (pace_relay.h) and sent up, and at the root the whole job's sample
// for the judge (straggler_check.h, through JobMachine::OnPaceSample). The overlay
// (tree_links.h) only carries its frames ("pace") and says who its live
// children are: LookLinks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launch/job_link.h"
#include "shim/control/pace/clock_offset.h"
#include "shim/control/pace_relay.h"
#include "shim/control/wire.h"

namespace aml {

class JobMachine;

// What the looks need of the overlay.
class LookLinks {
 public:
  virtual ~LookLinks() = default;
  virtual std::vector<int> LiveChildren() const = 0;
  // Levels of the tree below this shim, seen from `level`.
  virtual int LevelsBelow(int level) const = 0;
  // False for a child that is gone: its part is not waited for.
  virtual bool Keeps(int child) const = 0;
  virtual RootClock Clock() const = 0;
  virtual void SendUp(const std::string& frame) = 0;
  virtual void SendDown(const std::string& frame) = 0;
};

class StragglerLooks {
 public:
  // `every_s`: --straggler-check (0: off); `dump_timeout_s`: the records'.
  StragglerLooks(int rank, double every_s, double dump_timeout_s, LookLinks* links,
                 JobMachine* machine)
      : rank_(rank), every_s_(every_s), dump_timeout_s_(dump_timeout_s), links_(links),
        machine_(machine) {}

  // The job went: the root's first look is due one interval later.
  void Start(double now) { next_ = now + every_s_; }
  // A "pace" frame: from the parent, a look begins here; from a child, its part.
  void FromParent(const Msg& m, double now);
  void FromChild(int child, const Msg& m, double now);
  // This node's part of `look` (its ranks' entry times, as the node
  // machine read them).
  void Own(int64_t look, const std::vector<RankTimes>& times, double now);
  // The look's deadline, and at the root the next look (`go`: the job runs).
  void OnTimer(double now, bool go);
  double NextDeadline(double next, bool go) const;

  int64_t dropped() const { return relay_.dropped(); }  // parts after their look went up
  int64_t sent() const { return sent_; }                 // looks this shim sent on

 private:
  void Begin(int64_t look, int level, double now);
  void Finish(double now);

  int rank_;
  double every_s_, dump_timeout_s_;
  LookLinks* links_;
  JobMachine* machine_;
  PaceRelay relay_;
  int64_t begun_ = 0, sent_ = 0;  // the root's looks, and every shim's sent on
  double next_ = 0;
};

}  // namespace aml
