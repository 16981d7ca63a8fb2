// A hang's culprit from the ranks' flight records (docs/control-plane.md,
// "Naming the culprit"): the first collective that not every rank of its
// group entered, the ranks that did not (with their node and host, and
// where they are instead), the ranks that entered it and wait, and the
// ranks whose record never came. Ranks of one group at the same sequence
// number in different collectives are a mismatch, named too. A rank missing
// from one group's collective because it waits in another group's (where
// someone else is missing) is a victim, not a culprit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch/flight/fr_dump.h"

namespace aml {

// What one rank's shim sent at the verdict.
struct RankFlight {
  int rank = 0;
  int node = 0;      // its NODE_RANK
  int shim = -1;     // the shim that holds it (its launcher rank)
  std::string host;
  std::optional<FrSummary> fr;  // none: why_none says why
  std::string why_none;
};

struct CulpritRank {
  int rank = 0, node = -1;  // -1: its shim never answered
  int shim = -1;
  std::string host;
  FrOp last;  // its own last collective in the group (seq -1: none)
};

struct Mismatch {
  int64_t seq = 0;
  // Each variant ("all_reduce [[4]] Float") and its ranks.
  std::vector<std::pair<std::string, std::vector<int>>> variants;
};

struct Culprit {
  // A group was found where not every rank entered a collective.
  bool found = false;
  std::string pg, desc, group_ranks;  // the group: "0", "default_pg", "0-7"
  FrOp op;                            // the collective (seq, op, sizes, dtype)
  std::vector<CulpritRank> missing;   // did not enter it
  std::vector<int> waiting;           // entered it and wait
  std::vector<Mismatch> mismatches;
  // Ranks with no record, and why ("rank 3: no answer within --dump-timeout 10 s").
  std::vector<std::pair<int, std::string>> no_record;
  // Ranks whose record lacks the stack traces asked for, and why.
  std::vector<std::pair<int, std::string>> no_stacks;
  // Every rank answered and each group's ranks all entered its last
  // collective: the fault is not one rank's (stuck_op names the one).
  bool all_entered = false;
  std::string stuck_pg, stuck_desc;
  FrOp stuck_op;
  // The node every culprit rank is on (-1: none, or several), its shim.
  int node = -1, shim = -1;
  std::string host;
};

// The verdict from every rank's report (`world`: the job's ranks).
Culprit FindCulprit(const std::vector<RankFlight>& reports, int world);

// One line, "aml-shim: culprit: ..." or "aml-shim: no culprit: ...".
std::string CulpritLine(const Culprit& c);
// failure.json's "culprit" object.
std::string CulpritJson(const Culprit& c);

}  // namespace aml
