// The world of a job with spare nodes (--spares K; docs/control-plane.md,
// "Spares and retirement"): of the N shims the launcher started, one per
// node, the first N - K hold NODE_RANK 0 .. N - K - 1 and the last K wait.
// A shim's ranks are the world of the NODE_RANK it holds: RANK = NODE_RANK *
// nproc + child, WORLD_SIZE = (N - K) * nproc, and the same for whichever
// shim holds that NODE_RANK after a restart.
#pragma once

#include "shim/base/result.h"
#include "shim/world/world.h"

namespace aml {

// Why a job cannot keep `spares` spares (exit 125): one shim per node, and
// at least one node left to run ranks.
Status CheckSpares(const World& world, int spares);

// True for the shims that start as spares.
inline bool IsSpare(const World& world, int spares) {
  return spares > 0 && world.rank.value >= world.size.value - spares;
}

// The world of the shim that holds NODE_RANK `node` (the launcher's world
// otherwise: its master, its job), with `spares` of its shims waiting.
World HolderWorld(const World& world, int spares, int node);

}  // namespace aml
