#include "shim/world/world.h"

namespace aml {

const char* LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kSingleton: return "singleton";
    case Launcher::kOpenMpi: return "Open MPI";
    case Launcher::kPmix: return "PMIx";
    case Launcher::kHydra: return "MPICH/Intel MPI (Hydra)";
    case Launcher::kSlurmPmi2: return "Slurm PMI-2 (srun --mpi=pmi2)";
    case Launcher::kMvapich: return "MVAPICH2";
    case Launcher::kSlurm: return "Slurm";
    case Launcher::kTorch: return "torch environment";
  }
  return "?";
}

bool IsMpiLauncher(Launcher l) {
  return l == Launcher::kOpenMpi || l == Launcher::kPmix || l == Launcher::kHydra ||
         l == Launcher::kSlurmPmi2 || l == Launcher::kMvapich;
}

bool HasLauncher(Launcher l) { return IsMpiLauncher(l) || l == Launcher::kSlurm; }

}  // namespace aml
