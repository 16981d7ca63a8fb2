// What a simulated run did, as a user sees it (every shim's exit, rank 0's
// verdicts and its record), checked against what the oracle says must
// happen (oracle.h): the outcome, the record's content and the timing rules
// of docs/control-plane.md. Times are virtual seconds after rank 0's go.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launch/job_link.h"
#include "shim/sim/fault_plan.h"
#include "shim/sim/oracle.h"

namespace aml {

struct ShimRecord {
  bool exited = false, dead = false;
  int code = 0;
  double exit_at = -1;
  double stop_at = -1;       // its first order to end its ranks (halt, end or stop)
  double verdict_at = -1;    // the job's final verdict reached it (stop), or -1
  double signalled_at = -1;  // its launcher's SIGTERM
};

struct RunRecord {
  std::vector<ShimRecord> shims;
  // Rank 0's verdicts as it sent them down ("stop", "end", "restart", ...),
  // each once, and the job's last order there (with the record).
  std::vector<std::pair<double, std::string>> verdicts;
  bool has_final = false;
  StopOrder final_order;
  double first_failure_at = -1;  // the first rank's failure anywhere
  int root = 0;  // the shim that held the job at its end (a heir, when rank 0's was lost)
  std::vector<double> takeovers;  // when each heir took the job
  int restarts = 0;
  // --faults pace: the nodes the root named slow (shim: the look that named
  // it), the looks it judged, and the largest look's part on any link.
  std::map<int, int64_t> named;
  int64_t pace_looks = 0;
  long long pace_bytes_max = 0;
};

// "" when the run is one the oracle foresaw and kept the timing rules;
// else what broke, with the story of the nearest foreseen outcome.
std::string CheckRun(const FaultPlan& plan, const OracleSetup& setup, const RunRecord& run);

}  // namespace aml
