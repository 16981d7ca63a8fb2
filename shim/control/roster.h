// Which shim holds which NODE_RANK (docs/control-plane.md, "Spares and
// retirement"): with --spares K the last K shims by launcher rank start no
// ranks and wait; a node that is lost, or whose ranks fail first in
// --retire-after attempts in a row, is retired, and at the next attempt a
// spare takes its NODE_RANK (and so its ranks' RANK block: every other rank
// keeps its RANK, WORLD_SIZE never changes). Rank 0's shim keeps the roster;
// every restart order carries who holds each NODE_RANK. It knows nothing of
// the tree or the clock: the job's state machine (job_machine.h) asks it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "shim/base/json_read.h"

namespace aml {

struct Retirement {
  int shim = -1;
  std::string host;
  std::string reason;  // "lost: ...", "its ranks failed first in attempts 1 and 2", ...
  int attempt = 0;     // the attempt in which it was retired
  int node = -1;       // the NODE_RANK it held (-1: a spare)
  std::string given_back;  // non-empty: a spare again since, and why
};

// The reason of a node --retire-slow retired.
constexpr char kSlowReason[] = "named slow: ";

class Roster {
 public:
  // `shims` in all, the last `spares` of them spares: shim s < shims -
  // spares holds NODE_RANK s.
  Roster(int shims, int spares);

  int nodes() const { return static_cast<int>(holder_.size()); }
  int HolderOf(int node) const { return holder_[static_cast<size_t>(node)]; }
  int NodeOf(int shim) const;  // -1: a spare, or retired
  bool Retired(int shim) const { return retired_.count(shim) > 0; }
  // Spares not retired (and not lost), in launcher order.
  std::vector<int> Spares() const;
  // Shims that hold a NODE_RANK now.
  std::vector<int> Holders() const;
  // Vacant NODE_RANKs (their holder retired and no spare took them yet).
  int Vacant() const;

  // Retires `shim`; its NODE_RANK (if it held one) is vacant until Fill().
  // True when it held one. Once only: a second call for it does nothing.
  bool Retire(int shim, const std::string& host, const std::string& reason, int attempt);
  // The last retirement of NODE_RANK `node`'s holder as slow (kSlowReason),
  // given back or not; null when none.
  const Retirement* SlowRetirement(int node) const;
  // A shim retired as slow (alive, idle) is a spare again: `why` goes into
  // its record. False when it is not so retired (or given back already).
  bool GiveBack(int shim, const std::string& why);
  // A spare (lowest launcher rank first) for each vacant NODE_RANK, lowest
  // NODE_RANK first. False when the spares are too few (the roster is then
  // unchanged).
  bool Fill();

  // The job's first failure of an attempt was on `shim`'s ranks alone (-1:
  // none counts: a loss, the script's own failure, several nodes at once,
  // a hang). Returns the streak of attempts in a row for `shim`.
  int NoteFirstFailure(int shim);
  int Streak(int shim) const;

  const std::vector<Retirement>& retirements() const { return retirements_; }
  // The holder of each NODE_RANK for a restart order, runs of consecutive
  // shims as "a-b": "0-1,5" (shims 0, 1, 5 hold NODE_RANKs 0, 1, 2), "-1"
  // for one held by nobody.
  std::string Encode() const;
  // Any such list written so.
  static std::string Runs(const std::vector<int>& list);
  // Such a list read back (empty when malformed), and the NODE_RANK of
  // `shim` in it: -1 when it holds none, -2 when the list is malformed.
  static std::vector<int> Decode(const std::string& holders);
  static int NodeIn(const std::string& holders, int shim);
  // The whole roster (holders, spares, retirements, streak) as JSON, and
  // it read back over a roster of the same shims (docs/control-plane.md,
  // "A new root": the root hands it to its heir). False when malformed.
  std::string Save() const;
  bool Load(const JsonValue& v);
  // failure.json's "retired": [{"node":..,"host":..,"reason":..,"attempt":..}].
  std::string RetiredJson() const;
  // One line each: "NODE_RANK 3 (rank 3's shim on n3): reason".
  std::string RetiredText() const;

 private:
  std::vector<int> holder_;  // NODE_RANK -> shim (-1: vacant)
  std::vector<int> node_of_; // shim -> NODE_RANK (-1: none)
  std::vector<int> spares_;  // waiting, in launcher order
  std::set<int> retired_;
  std::vector<Retirement> retirements_;
  int streak_shim_ = -1, streak_ = 0;
};

}  // namespace aml
