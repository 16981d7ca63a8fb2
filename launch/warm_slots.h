// --warm-restart's decisions (docs/control-plane.md, "Warm restarts"): for
// each of the node's ranks (a slot), when its standby interpreter is made,
// and at a restart whether the rank starts from it or cold, and why. No
// processes and no clock: the node's machine (node_machine.h) holds one and
// gives it the time; its process table makes, hands over and ends the
// standbys (the supervisor's real ones, launch/warm_pool.h; the simulator's,
// shim/sim/sim_node.h), so both run these rules:
//
//   due       a rank started: its standby is made kAfterS later (not beside
//             the ranks' own start-up), once the rank's modules are known
//             (aml-shim's agent writes them when its process group is up; an
//             earlier attempt's count), or kLearnS after the rank's start
//             without them; a spare's slot (no rank ran there) kAfterS after
//             the job's start, with --preload's modules alone
//   live      made, waiting
//   taken     at a restart, given the attempt's order: the rank runs in it
//   gone      it could not be made, it ended, or it refused its order: that
//             rank's next start is cold, with that reason
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace aml {

class WarmSlots {
 public:
  static constexpr double kAfterS = 10;  // after the attempt's ranks started
  static constexpr double kLearnS = 60;  // at most, waiting for the rank's modules
  static constexpr double kLearnLookS = 1;  // how often a due standby looks for them

  // Slot `i`'s rank started at `now` (`learn`: wait for its modules; false
  // for a spare's slot). A slot whose standby lives keeps it.
  void Due(size_t i, bool learn, double now);
  // The slots whose standby is to be made now; `learned(i)`: slot i's rank's
  // modules are known. Each is made (Made) or not (Gone) by the caller.
  std::vector<size_t> Ready(double now, const std::function<bool(size_t)>& learned);
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
    double due = -1;          // when it is to be made (-1: none due)
    double learn_until = -1;  // made without the rank's modules from then
    std::string gone;         // why its last standby is gone ("": none went)
  };
  Slot& At(size_t i);
  std::vector<Slot> slots_;
};

}  // namespace aml
