// The hang's roll-call (docs/control-plane.md, "Hang watchdog"): every rank's stack
// signature, grouped by identical signature, the largest group first, so that
// the one rank that is somewhere else stands out. Printed once by rank 0's
// shim; the same as failure.json's "hang" record.
#pragma once

#include <string>
#include <vector>

namespace aml {

struct RankReport {
  int rank = 0;
  int node = 0;
  std::string host;
  std::string signature;  // "" when the rank had no stack
  std::string why_none;   // why not, when signature is ""
};

struct HangFacts {
  double timeout_s = 0;  // --hang-timeout
  double silent_s = 0;   // how long the job had written nothing
  int world_size = 0;    // ranks (children) in the job
  std::vector<RankReport> reports;
  std::vector<std::string> missing;  // shims that sent no stacks: "rank 4's shim on h"
  std::string log_dir;  // rank 0's --log-dir ("" when none): where the stacks are kept
};

// The roll-call's lines, each starting "aml-shim: ".
std::string FormatRollCall(const HangFacts& facts);
// failure.json's object: {"run": ..., "hang": {...}}.
std::string HangJson(const std::string& run_id, const HangFacts& facts);

}  // namespace aml
