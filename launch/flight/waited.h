// What the other ranks were doing when a rank failed (docs/control-plane.md,
// "Naming the culprit"): their flight records, taken before they were
// ended, say which collective each waited in. One line beside the failure's
// summary, "aml-shim: rank 17 failed (exit status 1) while ranks
// 0-16,18-1023 waited in all_reduce #5121 [[4]] Float of group 0
// (default_pg)", and failure.json's "waited".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launch/flight/culprit.h"
#include "launch/flight/fr_dump.h"

namespace aml {

struct Waited {
  // The collective some ranks were in: the first they entered and had not
  // completed, or when every one had, their last (`completed` lists those:
  // a Gloo rank's collective that its peer's death ended is marked so).
  struct In {
    std::string pg, desc;
    FrOp op;
    std::vector<int> ranks, completed;
  };
  std::vector<In> in;       // the most ranks first
  std::vector<int> idle;    // their record holds no collective
  std::vector<std::pair<int, std::string>> no_record;  // rank, why
};

// From the records of the ranks other than `failed_rank` (its own, if
// there, is left out: it had ended).
Waited FindWaited(const std::vector<RankFlight>& records, int failed_rank);

// "aml-shim: rank R failed (STATUS) while ...\n"; "" when no record came
// (nothing to say beyond the failure's summary).
std::string WaitedLine(int failed_rank, const std::string& status, const Waited& w);
// failure.json's "waited" object ("" when the line is "").
std::string WaitedJson(int failed_rank, const std::string& status, const Waited& w);

}  // namespace aml
