// The world variables each child gets (docs/world.md, "How the world is resolved"),
// each with its reason.
#pragma once

#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/env_var.h"
#include "shim/world/world.h"

namespace aml {

// Which child of how many this shim starts (1 of 1 in exec mode).
struct ChildSlot {
  int index = 0;
  int nproc = 1;
  bool output_piped = false;  // aml-shim reads the child's output
  bool fault_handler = false; // --hang-timeout: Python's stacks on SIGABRT
  int max_restarts = 0;        // --max-restarts: TORCHELASTIC_MAX_RESTARTS
};

// The world of child `slot` of this shim:
// RANK = s*p + i, WORLD_SIZE = S*p, LOCAL_RANK = l*p + i, LOCAL_WORLD_SIZE = L*p.
std::vector<EnvVar> BuildContract(const World& world, const EnvSnapshot& env,
                                  const ChildSlot& slot);

// --node-launcher: the node's contract alone (MASTER_ADDR, MASTER_PORT,
// NODE_RANK, NNODES, GROUP_RANK, GROUP_WORLD_SIZE and torchrun's PET_*
// defaults for them), and nothing per process: no RANK, LOCAL_RANK,
// WORLD_SIZE, TORCHELASTIC_*, nor the launcher's variables of this process
// as its rank (RankVariables), which are taken away.
std::vector<EnvVar> BuildNodeContract(const World& world, const EnvSnapshot& env,
                                      const ChildSlot& slot);

// Slurm's per-task variables for child `slot` of a shim that Slurm started
// as one task (docs/torchrun.md, "Slurm's variables"): SLURM_PROCID,
// SLURM_LOCALID, SLURM_NTASKS, ... as if srun had started each child, so
// that a library that reads Slurm first sees the same world as RANK and
// WORLD_SIZE. None when Slurm did not start the shim or with one child.
std::vector<EnvVar> SlurmTaskVars(const World& world, const EnvSnapshot& env,
                                  const ChildSlot& slot);

// "2(x3),1" with each count times `p`: Slurm's compressed tasks per node.
std::string ScaleTasksPerNode(const std::string& compressed, int p);

// The command's argv, with --local_rank=N appended under --local-rank-arg.
std::vector<std::string> BuildArgv(const std::vector<std::string>& command,
                                   bool local_rank_arg,
                                   const std::vector<EnvVar>& vars);

}  // namespace aml
