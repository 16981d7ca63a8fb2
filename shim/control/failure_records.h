// A failure's flight records (docs/control-plane.md, "Job-wide fail-fast"):
// when a rank fails, every shim takes its running ranks' flight
// records before it ends them and sends them to rank 0's shim, once per
// attempt; rank 0's verdict waits for them (--dump-timeout at most) and says
// where the other ranks waited (launch/flight/waited.h). What each shim sends
// (Frame), and what the root gathers (one FailureRecords, owned by the job
// machine).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "launch/flight/culprit.h"
#include "launch/flight/waited.h"
#include "launch/job_link.h"
#include "shim/control/wire.h"

namespace aml {

// The ranks' records rank 0 keeps for one failure, at most.
inline constexpr size_t kMaxRecords = 1 << 20;

class FailureRecords {
 public:
  // The "records" frame of a shim that is not the root: its ranks' records.
  static std::string Frame(int shim, int node, const std::string& host,
                           const std::vector<RankRecord>& records);

  // A failure's halt: the records are asked for (with the recorder) or not.
  void Ask(bool asked) { asked_ = asked; }
  bool asked() const { return asked_; }
  // The root's own ranks' records (its node machine took them).
  void Own(int shim, int node, const std::string& host, const std::vector<RankRecord>& records);
  // Another shim's "records" frame: the first of each shim counts (`size`:
  // the job's shims; `own`: the root's rank, whose come by Own).
  void FromShim(const Msg& m, int size, int own);
  // The shims whose records came.
  const std::set<int>& in() const { return in_; }
  // Where the others waited when `rank` failed.
  Waited WaitedFor(int rank) const { return FindWaited(records_, rank); }
  // A new attempt: none asked, none kept.
  void Clear();

 private:
  bool asked_ = false;
  std::vector<RankFlight> records_;
  std::set<int> in_;
};

}  // namespace aml
