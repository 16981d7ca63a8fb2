#include "shim/plan/contract.h"

#include <algorithm>
#include <cctype>

#include "shim/world/sources.h"

namespace aml {
namespace {

std::string ValueOfBuilt(const ContractBuilder& b, const char* name) {
  return ValueOf(b.vars(), name);
}

// What a Python child needs under aml-shim, whoever starts it.
void PythonDefaults(const ChildSlot& slot, ContractBuilder* b) {
  if (slot.output_piped)
    b->Default("PYTHONUNBUFFERED", "1", "aml-shim reads the output through a pipe");
  if (slot.fault_handler)
    b->Default("PYTHONFAULTHANDLER", "1",
               "--hang-timeout: on the watchdog's SIGABRT Python prints every thread's stack");
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
          "rank 0 creates the first attempt's TCPStore (with --warm-restart, a restart's "
          "is opened before its ranks by the store host of rank 0's node: True then)");
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
  PythonDefaults(slot, &b);
  return b.vars();
}

std::vector<EnvVar> BuildNodeContract(const World& world, const EnvSnapshot& env,
                                      const ChildSlot& slot) {
  ContractBuilder b(env);
  auto str = [](long v) { return std::to_string(v); };
  const std::string nodes = str(world.node_count.value), node = str(world.node_rank.value);
  b.Default("MASTER_ADDR", world.master_addr.value, world.master_addr.why);
  b.Default("MASTER_PORT", str(world.master_port.value), world.master_port.why);
  b.Force("NODE_RANK", node, world.node_rank.why);
  b.Force("NNODES", nodes, world.node_count.why);
  b.Force("GROUP_RANK", node, "the node, as torchrun: " + world.node_rank.why);
  b.Force("GROUP_WORLD_SIZE", nodes, "the nodes, as torchrun: " + world.node_count.why);
  // torchrun takes its arguments' defaults from PET_<ARG> (torch's
  // argparse_util): a bare `torchrun --nproc-per-node 8 train.py` is then
  // this node of this job.
  const std::string addr = ValueOf(b.vars(), "MASTER_ADDR"), port = ValueOf(b.vars(), "MASTER_PORT");
  b.Force("PET_NNODES", nodes, "torchrun's --nnodes: " + world.node_count.why);
  b.Force("PET_NODE_RANK", node, "torchrun's --node-rank: " + world.node_rank.why);
  b.Force("PET_MASTER_ADDR", addr, "torchrun's --master-addr: MASTER_ADDR");
  b.Force("PET_MASTER_PORT", port, "torchrun's --master-port: MASTER_PORT");
  const std::string not_a_rank = "--node-launcher: the command is this node's launcher, not a rank";
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "ROLE_NAME",
                           "ROLE_RANK", "ROLE_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
                           "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
                           "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE"})
    b.Remove(name, not_a_rank + " (its launcher sets it for its own processes)");
  for (const std::string& name : RankVariables(env.vars()))
    b.Remove(name, not_a_rank + ": " + std::string(LauncherName(world.source)) +
                       "'s variable of this process's place in its job (an MPI library "
                       "in the command's processes would join that job)");
  PythonDefaults(slot, &b);
  return b.vars();
}

std::string ScaleTasksPerNode(const std::string& compressed, int p) {
  // "2(x3),1": counts, each optionally repeated.
  std::string out;
  size_t i = 0;
  while (i < compressed.size()) {
    size_t j = i;
    while (j < compressed.size() && std::isdigit(static_cast<unsigned char>(compressed[j]))) ++j;
    if (j == i) return compressed;  // not Slurm's format: left as it is
    out += std::to_string(std::stol(compressed.substr(i, j - i)) * p);
    size_t k = compressed.find(',', j);
    if (k == std::string::npos) k = compressed.size();
    out += compressed.substr(j, k - j);  // "(x3)" or ""
    if (k < compressed.size()) out += ",";
    i = k + 1;
  }
  return out;
}

std::vector<EnvVar> SlurmTaskVars(const World& world, const EnvSnapshot& env,
                                  const ChildSlot& slot) {
  const int p = slot.nproc, i = slot.index;
  if (p == 1 || !env.Has("SLURM_PROCID")) return {};
  ContractBuilder b(env);
  auto str = [](long v) { return std::to_string(v); };
  const std::string of = " (child " + str(i) + " of " + str(p) + ", as srun would number it)";
  const long rank = long{world.rank.value} * p + i, size = long{world.size.value} * p;
  b.Force("SLURM_PROCID", str(rank), "RANK" + of);
  b.Force("SLURM_LOCALID", str(long{world.local_rank.value} * p + i), "LOCAL_RANK" + of);
  for (const char* name : {"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS"})
    if (env.Has(name)) b.Force(name, str(size), "WORLD_SIZE" + of);
  if (env.Has("SLURM_NTASKS_PER_NODE"))
    b.Force("SLURM_NTASKS_PER_NODE", str(long{world.local_size.value} * p), "LOCAL_WORLD_SIZE" + of);
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})
    if (const std::string* v = env.Find(name))
      b.Force(name, ScaleTasksPerNode(*v, p), "Slurm's " + std::string(name) + "=" + *v +
                                                  ", each node's tasks times " + str(p) + of);
  if (const std::string* gtids = env.Find("SLURM_GTIDS")) {
    // The node's tasks: each shim's children in its place.
    std::string list;
    size_t from = 0;
    while (from <= gtids->size()) {
      const size_t comma = std::min(gtids->find(',', from), gtids->size());
      const std::string one = gtids->substr(from, comma - from);
      from = comma + 1;
      if (one.empty() || one.find_first_not_of("0123456789") != std::string::npos) continue;
      const long t = std::stol(one);
      for (int c = 0; c < p; ++c) list += (list.empty() ? "" : ",") + str(t * p + c);
    }
    b.Force("SLURM_GTIDS", list, "Slurm's SLURM_GTIDS=" + *gtids + ", each task's children" + of);
  }
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
