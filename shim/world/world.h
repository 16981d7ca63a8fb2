// What one launcher's variables say about this process's place in the job,
// each value with the rule or variable it came from (for `env --explain`).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aml {

// Where a world came from: the launcher whose variables gave the rank.
enum class Launcher {
  kSingleton, kOpenMpi, kPmix, kHydra, kSlurmPmi2, kMvapich, kSlurm, kKubeflow, kTorch
};

// "Open MPI", "MPICH/Intel MPI (Hydra)", ... for messages and `env`.
const char* LauncherName(Launcher l);

// An MPI library can be initialised under this launcher (MPI rendezvous).
bool IsMpiLauncher(Launcher l);
// A launcher process started this one (mpirun or its daemon, slurmstepd,
// Hydra's proxy): its variables are not ones a user sets by hand in a shell
// (torchrun's RANK and WORLD_SIZE may be), so its death ends the job
// (launch/lifeline.h).
bool HasLauncher(Launcher l);

// The variables of `env` that describe this process as one rank of a
// launcher's job (Open MPI's OMPI_COMM_WORLD_* and its runtime's URIs,
// PMIx's, Hydra's PMI_*, MVAPICH's, Slurm's per-task ones): what a
// per-node launcher's own processes must not inherit (--node-launcher),
// lest they believe they are the launcher's ranks (an mpi4py import in
// PyTorch Lightning joins mpirun's world of one process per node).
std::vector<std::string> RankVariables(const std::map<std::string, std::string, std::less<>>& env);

template <class T>
struct Sourced {
  T value{};
  std::string why;  // e.g. "OMPI_COMM_WORLD_RANK=3"
};

// A partial world as read from one source of variables.
struct SourceWorld {
  Launcher source = Launcher::kSingleton;
  std::optional<Sourced<int>> rank, size, local_rank, local_size;
  std::optional<Sourced<int>> node_rank, node_count;
  // Hosts of the job in order (Slurm's node list), when known.
  std::optional<Sourced<std::vector<std::string>>> hosts;
};

// The resolved world of this process (the "shim world": one entry per shim
// process, before any per-node fan-out).
struct World {
  Launcher source = Launcher::kSingleton;  // the source that gave the rank
  Sourced<int> rank, size, local_rank, local_size, node_rank, node_count;
  // NODE_RANK is proven by job-wide facts every rank shares (a launcher's
  // node index, one node, one process per node, a NODE_RANK you set, or the
  // MPI rendezvous); when false it is a guess that must not reach a child.
  bool node_rank_exact = true;
  Sourced<std::string> master_addr;
  Sourced<int> master_port;
  bool single_node = true;
  // The job's hosts in order (Slurm's node list), when known.
  std::optional<Sourced<std::vector<std::string>>> hosts;
  // Rank 0's host as the launcher's runtime names it (PMIx), when asked.
  std::optional<Sourced<std::string>> rank0_host;
  // This process connected to the launcher's PMIx server as its rank: the
  // command's own PMIx client connects second (shim/plan/contract.cc).
  bool asked_pmix = false;
  // The launcher's PMIx server was offered but did not answer (why), so the
  // world comes from the variables; an MPI rendezvous under Open MPI would
  // meet the same server in MPI_Init.
  std::string pmix_unanswered;
  std::vector<std::string> warnings;  // conflicts between sources
  std::vector<std::string> notes;     // sources seen and what was ignored
};

}  // namespace aml
