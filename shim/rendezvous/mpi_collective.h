// Collective over the MPI library of the launcher that started this process,
// loaded at run time (dlopen), so that aml-shim needs no MPI to build or run.
// MPI_Init on open, MPI_Finalize on destruction: nothing may call MPI after.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shim/rendezvous/collective.h"
#include "shim/world/world.h"
#include "shim/base/env_snapshot.h"

namespace aml {

// The libraries to try, in order, for the launcher named by `source`
// ("Open MPI", "Hydra", "MVAPICH2", ...); AML_SHIM_LIBMPI alone when set.
std::vector<std::string> MpiLibraryCandidates(const EnvSnapshot& env, Launcher source);

// AML_SHIM_LIBMPI names a file that does not exist or cannot be read: an
// error naming it, checked before anything runs, MPI rendezvous or not.
Status CheckLibMpiOverride(const EnvSnapshot& env);

// Loads the first library that opens, recognises its ABI (Open MPI's
// pointer handles or MPICH's integer handles) and initialises MPI.
Result<std::unique_ptr<Collective>> OpenMpiCollective(const EnvSnapshot& env,
                                                      Launcher source);

}  // namespace aml
