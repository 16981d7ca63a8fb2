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
    case Launcher::kKubeflow: return "Kubeflow (TrainJob, PyTorchJob)";
    case Launcher::kTorch: return "torch environment";
  }
  return "?";
}

bool IsMpiLauncher(Launcher l) {
  return l == Launcher::kOpenMpi || l == Launcher::kPmix || l == Launcher::kHydra ||
         l == Launcher::kSlurmPmi2 || l == Launcher::kMvapich;
}

bool HasLauncher(Launcher l) { return IsMpiLauncher(l) || l == Launcher::kSlurm; }

std::vector<std::string> RankVariables(const std::map<std::string, std::string, std::less<>>& env) {
  // Whole families, and single names of mixed families (OMPI_MCA_* holds
  // the user's settings too; only the runtime's are its job's).
  static const char* const kPrefixes[] = {
      "OMPI_COMM_WORLD_", "OMPI_APP_CTX_", "OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix",
      "OMPI_MCA_prte_", "PMIX_", "PRTE_", "PMI_", "MPI_LOCAL", "MPIR_CVAR_CH3_INTERFACE",
      "MV2_COMM_WORLD_", "MPIRUN_"};
  static const char* const kNames[] = {
      "OMPI_UNIVERSE_SIZE", "OMPI_COMMAND", "OMPI_ARGV", "OMPI_NUM_APP_CTX", "OMPI_FIRST_RANKS",
      "OMPI_FILE_LOCATION", "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_RUNTIME_QUERY_hint",
      "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE",
      "SLURM_STEP_NUM_TASKS", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_GTIDS",
      "SLURM_TASK_PID"};
  std::vector<std::string> out;
  for (const auto& [name, value] : env) {
    bool rank = false;
    for (const char* p : kPrefixes) rank = rank || name.rfind(p, 0) == 0;
    for (const char* n : kNames) rank = rank || name == n;
    // PMIX_MCA_* are the user's settings of PMIx itself, not a rank's place.
    if (name.rfind("PMIX_MCA_", 0) == 0) rank = false;
    if (rank) out.push_back(name);
  }
  return out;
}

}  // namespace aml
