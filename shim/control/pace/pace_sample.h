// One look of the straggler check (docs/control-plane.md, "Slow nodes"),
// as it goes up the tree: for each of the job's busiest process groups and
// each recent collective of it, how many shims saw it and the two of them
// whose ranks entered it last, on the root's clock. Each shim makes its own
// from its ranks' flight records (its node entered when its last rank did),
// and each merges its children's into it before sending it up: the bytes a
// look sends over any link are bounded (kMaxPaceGroups groups of
// kMaxPaceOps collectives), whatever the job's size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launch/flight/fr_dump.h"
#include "shim/base/json_read.h"
#include "shim/base/result.h"

namespace aml {

constexpr size_t kMaxPaceGroups = 4;
constexpr size_t kMaxPaceOps = kMaxTimedOps;

struct PaceEntrant {
  int shim = -1;         // -1: none
  int rank = -1;         // the node's last rank to enter
  int64_t t_us = 0;      // when, on the root's clock (microseconds)
  int64_t bound_us = 0;  // that clock's bound (clock_offset.h)
};

struct PaceOp {
  int64_t seq = -1;
  int shims = 0;      // how many shims' ranks entered it
  PaceEntrant last;   // the last shim to enter
  PaceEntrant next;   // the last of the others (shim -1: none)
};

struct PaceGroup {
  std::string pg;
  std::vector<PaceOp> ops;  // ascending seq
};

struct PaceSample {
  int64_t look = -1;
  int shims = 0;  // shims whose part is in it
  std::vector<PaceGroup> groups;
};

// This shim's part of look `look`: for each group (the first
// kMaxPaceGroups with most collectives) the collectives every one of its
// ranks in that group completed, the node's entry being its last rank's,
// moved onto the root's clock by `offset_s` (bound `bound_s`).
PaceSample LocalPace(int shim, int64_t look, const std::vector<RankTimes>& ranks,
                     double offset_s, double bound_s);

// Merges `from` (a child's part of the same look) into `into`.
void MergePace(PaceSample* into, const PaceSample& from);

// As it goes on the wire (compact JSON), and back: the bytes come from
// another host, so parsing bounds groups, collectives and numbers again.
std::string PaceJson(const PaceSample& s);
Result<PaceSample> PaceFrom(const JsonValue& v);

}  // namespace aml
