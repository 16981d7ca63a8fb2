// Combines the sources by a fixed precedence into one World (docs/world.md, "How the world is resolved").
#pragma once

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/world/world.h"

namespace aml {

// Rank, size, local rank/size and node index, with conflict warnings.
// Does not decide the master (see master.h).
Result<World> ResolveRanks(const EnvSnapshot& env);

}  // namespace aml
