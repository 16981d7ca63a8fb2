// The master address and port rules of DESIGN.md §4.
#pragma once

#include "shim/env_snapshot.h"
#include "shim/options.h"
#include "shim/result.h"
#include "shim/world.h"

namespace aml {

// Fills world.master_addr and world.master_port, or sets
// world.needs_rendezvous when MPI must find them. Errors when nothing names
// the master of a multi-node job and MPI rendezvous is not allowed.
Status ResolveMaster(const EnvSnapshot& env, const Options& options,
                     World& world);

}  // namespace aml
