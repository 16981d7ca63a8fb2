// Looks made the way the shims make them (LocalPace of each node's ranks,
// merged), from entry times the test chooses: the pace tests' one helper.
#pragma once

#include <functional>
#include <vector>

#include "shim/control/pace/pace_sample.h"

namespace aml {

// `shims` nodes of `per_node` ranks each, in one group "0": collectives
// seq0 .. seq0+n-1, rank r entering collective s at enter(shim, r, s)
// seconds (its host's clock); each shim's clock moved by offset(shim) with
// bound `bound_s`.
inline PaceSample MakeLook(int64_t look, int shims, int per_node, int64_t seq0, int n,
                           const std::function<double(int, int, int64_t)>& enter,
                           const std::function<double(int)>& offset, double bound_s) {
  PaceSample all;
  for (int shim = 0; shim < shims; ++shim) {
    std::vector<RankTimes> ranks;
    for (int i = 0; i < per_node; ++i) {
      RankTimes r;
      r.rank = shim * per_node + i;
      FrEntryTimes g;
      g.pg = "0";
      for (int64_t s = seq0; s < seq0 + n; ++s)
        g.ops.emplace_back(s, static_cast<int64_t>(enter(shim, r.rank, s) * 1e9));
      r.groups.push_back(g);
      ranks.push_back(r);
    }
    PaceSample part = LocalPace(shim, look, ranks, offset(shim), bound_s);
    if (shim == 0) all = part;
    else MergePace(&all, part);
  }
  return all;
}

}  // namespace aml
