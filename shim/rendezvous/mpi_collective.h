// Collective over the MPI library of the launcher that started this process,
// loaded at run time (dlopen), so that aml-shim needs no MPI to build or run.
// MPI_Init on open, MPI_Finalize on destruction: nothing may call MPI after.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shim/rendezvous/collective.h"
#include "shim/world/world.h"
#include "shim/base/dynlib.h"
#include "shim/base/env_snapshot.h"

namespace aml {

// The library for the launcher named by `source` ("Open MPI", "Hydra",
// "MVAPICH2", ...), loaded by shim/base/dynlib.h's rule (AML_SHIM_LIBMPI).
LibrarySpec MpiLibrarySpec(Launcher source);

// Loads the first library that opens, recognises its ABI (Open MPI's
// pointer handles or MPICH's integer handles) and initialises MPI.
Result<std::unique_ptr<Collective>> OpenMpiCollective(const EnvSnapshot& env,
                                                      Launcher source);

}  // namespace aml
