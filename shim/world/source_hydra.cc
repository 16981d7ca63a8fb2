// MPICH and Intel MPI (the Hydra process manager), and the same PMI_RANK/
// PMI_SIZE from Slurm's PMI-2 plugin (srun --mpi=pmi2: SLURM_MPI_TYPE=pmi2,
// no MPI_LOCALRANKID; Slurm's own variables then give the local rank).
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
  const std::string* mpi_type = env.Find("SLURM_MPI_TYPE");
  const bool pmi2 = mpi_type && mpi_type->rfind("pmi2", 0) == 0 && !env.Has("MPI_LOCALRANKID");
  return ReadQuartet(env, pmi2 ? Launcher::kSlurmPmi2 : Launcher::kHydra,
                     {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
                      "MPI_LOCALNRANKS"});
}

}  // namespace aml
