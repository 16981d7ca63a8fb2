// MPICH and Intel MPI (the Hydra process manager).
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {

SourceResult ReadHydra(const EnvSnapshot& env) {
  if (!env.Has("PMI_RANK") && env.Has("PMI_PORT") && env.Has("PMI_ID")) {
    return Error{"PMI_PORT='" + env.GetOr("PMI_PORT", "") + "' and PMI_ID='" +
                 env.GetOr("PMI_ID", "") +
                 "' are set but PMI_RANK is not: Hydra's -pmi-port mode keeps "
                 "the rank out of the environment; launch without -pmi-port, "
                 "or set RANK/WORLD_SIZE/LOCAL_RANK yourself"};
  }
  return ReadQuartet(env, Launcher::kHydra,
                     {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
                      "MPI_LOCALNRANKS"});
}

}  // namespace aml
