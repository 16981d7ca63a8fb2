// The hang's roll-call (docs/control-plane.md, "Hang watchdog"): every rank's stack
// signature, grouped by identical signature, the largest group first, so that
// the one rank that is somewhere else stands out. Printed once by rank 0's
// shim; the same as failure.json's "hang" record.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/flight/culprit.h"

namespace aml {

struct RankReport {
  RankReport() = default;
  RankReport(int r, int n, std::string h, std::string sig, std::string why)
      : rank(r), node(n), host(std::move(h)), signature(std::move(sig)), why_none(std::move(why)) {}
  int rank = 0;
  int node = 0;
  std::string host;
  std::string signature;  // "" when the rank had no stack
  std::string why_none;   // why not, when signature is ""
  int shim = -1;          // the shim that sent it
  std::optional<FrSummary> fr;  // its flight record (none: fr_why)
  std::string fr_why;
};

struct HangFacts {
  double timeout_s = 0;  // --hang-timeout
  double silent_s = 0;   // how long the job had written nothing
  int world_size = 0;    // ranks (children) in the job
  std::vector<RankReport> reports;
  std::vector<std::string> missing;  // shims that sent no stacks: "rank 4's shim on h"
  std::string log_dir;  // rank 0's --log-dir ("" when none): where the stacks are kept
  // The culprit from the ranks' flight records (none: --flight-recorder
  // off), and the attempt (1: the first) whose records --log-dir keeps.
  std::optional<Culprit> culprit;
  int attempt = 1;
  std::vector<std::string> ras;  // what NCCL's RAS sockets said (one line each, distinct)
};

// The verdict from the reports' flight records (launch/flight/culprit.h).
Culprit CulpritOf(const std::vector<RankReport>& reports, int world_size);

// The roll-call's lines, each starting "aml-shim: ".
std::string FormatRollCall(const HangFacts& facts);
// failure.json's object: {"run": ..., "hang": {...}}.
std::string HangJson(const std::string& run_id, const HangFacts& facts);

}  // namespace aml
