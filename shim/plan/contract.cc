#include "shim/plan/contract.h"

#include "shim/world/sources.h"

namespace aml {
namespace {

std::string ValueOfBuilt(const ContractBuilder& b, const char* name) {
  return ValueOf(b.vars(), name);
}

}  // namespace

std::vector<EnvVar> BuildContract(const World& world, const EnvSnapshot& env,
                                  const ChildSlot& slot) {
  ContractBuilder b(env);
  const int p = slot.nproc, i = slot.index;
  auto str = [](long v) { return std::to_string(v); };
  if (p == 1) {
    b.Force("RANK", str(world.rank.value), world.rank.why);
    b.Force("WORLD_SIZE", str(world.size.value), world.size.why);
    b.Force("LOCAL_RANK", str(world.local_rank.value), world.local_rank.why);
    b.Force("LOCAL_WORLD_SIZE", str(world.local_size.value), world.local_size.why);
  } else {
    std::string of = " (child " + str(i) + " of " + str(p) + ")";
    b.Force("RANK", str(long{world.rank.value} * p + i),
            "shim rank * nproc + child: " + world.rank.why + of);
    b.Force("WORLD_SIZE", str(long{world.size.value} * p),
            "shims * nproc: " + world.size.why + of);
    b.Force("LOCAL_RANK", str(long{world.local_rank.value} * p + i),
            "shim local rank * nproc + child: " + world.local_rank.why + of);
    b.Force("LOCAL_WORLD_SIZE", str(long{world.local_size.value} * p),
            "local shims * nproc: " + world.local_size.why + of);
  }
  b.Force("NODE_RANK", str(world.node_rank.value), world.node_rank.why);
  // torchrun's worker contract (docs/torchrun.md, "torchrun's variables"): one
  // agent per node, so the group is the node.
  b.Force("GROUP_RANK", str(world.node_rank.value), "the node, as torchrun: " + world.node_rank.why);
  b.Force("GROUP_WORLD_SIZE", str(world.node_count.value),
          "the nodes, as torchrun: " + world.node_count.why);
  const std::string rank = ValueOfBuilt(b, "RANK"), size = ValueOfBuilt(b, "WORLD_SIZE");
  b.Force("ROLE_NAME", "default", "torchrun's default role");
  b.Force("ROLE_RANK", rank, "one role: RANK");
  b.Force("ROLE_WORLD_SIZE", size, "one role: WORLD_SIZE");
  auto job = ReadJobId(env);
  b.Force("TORCHELASTIC_RUN_ID", job ? job->value : "none",
          job ? "the job id (" + job->why + ")" : "torchrun's default --rdzv-id");
  const bool restarts = slot.max_restarts > 0;
  b.Force("TORCHELASTIC_RESTART_COUNT", "0",
          restarts ? "the first attempt (aml-shim counts its restarts here)"
                   : "no --max-restarts: never restarted");
  b.Force("TORCHELASTIC_MAX_RESTARTS", str(slot.max_restarts),
          restarts ? "--max-restarts" : "no --max-restarts: never restarted");
  b.Force("TORCHELASTIC_USE_AGENT_STORE", "False",
          "aml-shim runs no TCPStore of its own: rank 0 creates it");
  b.Default("MASTER_ADDR", world.master_addr.value, world.master_addr.why);
  b.Default("MASTER_PORT", str(world.master_port.value), world.master_port.why);
  if (long{world.local_size.value} * p > 1)
    b.Default("OMP_NUM_THREADS", "1",
              "more than one process per node (torchrun's rule)");
  // What torch 2.x's torchrun sets (torch 2.2 renamed NCCL_ASYNC_ERROR_HANDLING).
  b.Default("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "torchrun's default (torch 2.x)");
  if (world.asked_pmix)
    b.Default("PMIX_MCA_gds", "hash",
              "aml-shim was this rank's first PMIx client: PMIx's shared-memory store "
              "(gds ds21) refuses a second one, the command's MPI_Init");
  if (slot.output_piped)
    b.Default("PYTHONUNBUFFERED", "1", "aml-shim reads the output through a pipe");
  if (slot.fault_handler)
    b.Default("PYTHONFAULTHANDLER", "1",
              "--hang-timeout: on the watchdog's SIGABRT Python prints every thread's stack");
  return b.vars();
}

std::vector<std::string> BuildArgv(const std::vector<std::string>& command,
                                   bool local_rank_arg,
                                   const std::vector<EnvVar>& vars) {
  std::vector<std::string> argv = command;
  if (local_rank_arg)
    argv.push_back("--local_rank=" + ValueOf(vars, "LOCAL_RANK"));
  return argv;
}

}  // namespace aml
