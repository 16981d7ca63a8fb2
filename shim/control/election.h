// A heir's side of a new root (docs/control-plane.md, "A new root"), its
// state and its clock: the root's last record and the losses it said since;
// once the root is lost, the root it takes the place of, and when the
// election ends: the shims that reach the heir by its deadline count, and
// the heir takes the job not before an old root alive beyond a cut must
// have found the cut (kMaxSilenceS and a second after the heir, and each
// shim that reached it, found the root silent). What the heir does with the
// outcome (the majority rule, the record loaded, the retirements) is the
// job machine's (job_heir.cc).
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "shim/control/liveness.h"

namespace aml {

class Election {
 public:
  // The root's record, sent to its heir as the job starts and at every
  // restart (a frame), and each loss the root said since ("gone").
  void Record(const std::string& frame) {
    record_ = frame;
    gone_notes_.clear();
  }
  void Gone(const std::string& frame) { gone_notes_.push_back(frame); }
  const std::string& record() const { return record_; }
  const std::vector<std::string>& gone_notes() const { return gone_notes_; }

  // The root lost at `now` (`silent`: its link fell silent rather than
  // closed): the election runs `wait_s` at most.
  void Begin(bool silent, double now, double wait_s) {
    root_silent_ = silent;
    until_ = now + wait_s;
    not_before_ = silent ? now + kMaxSilenceS + 1 : now;
  }
  // Another shim that found the root silent reached this heir at `now`.
  void Silent(double now) { not_before_ = std::max(not_before_, now + kMaxSilenceS + 1); }
  // When it ends: at once when every shim counted said its ranks ended
  // (`all_in`), else at its deadline; never before the old root let go.
  double Deadline(bool all_in) const { return std::max(not_before_, all_in ? not_before_ : until_); }
  double until() const { return until_; }
  bool root_silent() const { return root_silent_; }

  // The root this heir takes the place of, once its record is loaded (-1:
  // none: the shim holds no job of a lost root).
  void TakePlaceOf(int root) { lost_root_ = root; }
  int lost_root() const { return lost_root_; }

 private:
  std::string record_;
  std::vector<std::string> gone_notes_;
  int lost_root_ = -1;
  bool root_silent_ = false;
  double until_ = 0, not_before_ = 0;
};

// The root's side: every heir it named, its children lost while they may
// live (silent, or each said it left for the heir), and when the last heir
// among them was. Beyond a cut such a heir may take the job: the root waits
// until every loss of that cut is found before it says "no spare left".
class HeirWatch {
 public:
  void Named(int heir) {
    if (heir >= 0) named_.insert(heir);
  }
  void LostAlive(int shim, double now) {
    if (named_.count(shim)) heir_lost_at_ = now;
  }
  // The heir fell silent and is awaited below the root's successor
  // (tree_links_losses.cc): it may be beyond a cut that parts this root from every
  // child (the root cut off), so the cut is unsettled from now as if the
  // heir were lost alive (before, the others, found lost first, left "no
  // spare left" said at once and a record written: test_netns_root).
  void Silent(double now) { heir_lost_at_ = std::max(heir_lost_at_, now); }
  // A heir lost alive up to kMaxSilenceS and a second before `now`: the
  // other losses of its cut may not all be found yet (until CutFoundAt()).
  bool CutUnsettled(double now) const { return heir_lost_at_ >= 0 && now < CutFoundAt(); }
  double CutFoundAt() const { return heir_lost_at_ + kMaxSilenceS + 1; }
 private:
  std::set<int> named_;
  double heir_lost_at_ = -1;
};

}  // namespace aml
