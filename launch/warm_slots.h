// --warm-restart's decisions (docs/control-plane.md, "Warm restarts"): for
// each of the node's ranks (a slot), when its standby interpreter is made,
// and at a restart whether the rank starts from it or cold, and why. No
// processes and no clock: the node's machine (node_machine.h) holds one and
// gives it the time; its process table makes, hands over and ends the
// standbys (the supervisor's real ones, launch/warm_pool.h; the simulator's,
// shim/sim/sim_node.h), so both run these rules:
//
//   due       a rank started (the first attempt's, or a restart's: the next
//             standby is due as the restart is under way), or a spare is
//             ready: its standby is made at once. A standby waits in the
//             idle scheduling class (launch/idle_class.h) until its order,
//             so it never slows a rank; it imports --preload's modules, and
//             the rank's own as soon as they are known (the rank's agent
//             writes them when its process group is up; an earlier
//             attempt's at once). Where this shim could not bring a standby
//             back from the idle class ("late": no CAP_SYS_NICE, a low
//             RLIMIT_NICE), it is made kAfterS after its rank started
//             instead, away from the ranks' own start-up, at the normal
//             classes.
//   live      made, waiting (still importing, or ready)
//   taken     at a restart, given the attempt's order: the rank runs in it
//   gone      it could not be made, it ended, or it refused its order: that
//             rank's next start is cold, with that reason
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace aml {

class WarmSlots {
 public:
  static constexpr double kAfterS = 10;  // "late": after the attempt's ranks started

  // Standbys made kAfterS after their rank's start (true), or at once.
  void Late(bool late) { late_ = late; }
  bool late() const { return late_; }
  // Slot `i`'s rank started at `now` (`rank`: false for a spare's slot, no
  // rank ran there: a slot already due stays due). A slot whose standby
  // lives keeps it.
  void Due(size_t i, bool rank, double now);
  // The slots whose standby is to be made now. Each is made (Made) or not
  // (Gone) by the caller.
  std::vector<size_t> Ready(double now);
  void Made(size_t i);
  // Slot i's standby could not be made, ended, or refused its order.
  void Gone(size_t i, std::string why);
  // At a restart: true when slot i's standby lives (it is to be given the
  // attempt's order: the slot has none after); false with why the rank
  // starts cold (none is due any more).
  bool Take(size_t i, std::string* why);
  // The job ends, or the node was retired: the slots whose standby lives
  // (to be ended); none is due after.
  std::vector<size_t> EndAll();
  double NextDeadline() const;  // the next due time (infinity: none)
  bool live(size_t i) const { return i < slots_.size() && slots_[i].live; }

 private:
  struct Slot {
    bool live = false;
    double due = -1;   // when it is to be made (-1: none due)
    std::string gone;  // why its last standby is gone ("": none went)
  };
  Slot& At(size_t i);
  std::vector<Slot> slots_;
  bool late_ = false;
};

}  // namespace aml
