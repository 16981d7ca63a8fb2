#include "shim/plan/child_plan.h"

#include "launch/flight/fr_env.h"

#include "launch/cpu_affinity.h"
#include "shim/topology/cpu_list.h"
#include "shim/plan/contract.h"
#include "shim/plan/tf_config.h"
#include "shim/world/source_util.h"

namespace aml {
namespace {

// TF_CONFIG of the child of rank `rank`, as a default.
Result<EnvVar> TfConfigVar(const TfConfigSpec& tf, int rank, const EnvSnapshot& env) {
  auto json = BuildTfConfig(tf.endpoints, tf.ps_count, rank);
  if (!json.ok()) return json.error();
  ContractBuilder b(env);
  b.Default("TF_CONFIG", *json, "--tf-config: " + std::to_string(tf.endpoints.size()) +
                                   " tasks, " + std::to_string(tf.ps_count) + " ps");
  return b.vars().front();
}

// The fabric variables of a child on GPU `local_rank`: UCX_NET_DEVICES
// nearest that GPU's NUMA node when it is known.
const std::vector<EnvVar>& FabricVars(const FabricFacts& f, const GpuTopology* gpus,
                                      int local_rank, const EnvSnapshot& env,
                                      FabricPlan* storage) {
  const size_t local = static_cast<size_t>(local_rank);
  if (!gpus || local >= gpus->gpus.size() || gpus->gpus[local].numa_node < 0)
    return f.plan.vars;
  *storage = PlanFabric(f.report, env, f.conf, gpus->gpus[local].numa_node);
  return storage->vars;
}

}  // namespace

Result<std::vector<ChildPlan>> PlanChildren(const World& world, const EnvSnapshot& env,
                                            const PlanRequest& req) {
  const int64_t world_size = int64_t{world.size.value} * req.nproc;
  if (world_size > kMaxWorld)
    return Error{"--nproc-per-node=" + std::to_string(req.nproc) + " on " +
                 world.size.why + " makes WORLD_SIZE " + std::to_string(world_size) +
                 ", more than aml-shim supports (" + std::to_string(kMaxWorld) + ")"};
  std::vector<ChildPlan> plans;
  for (int i = 0; i < req.nproc; ++i) {
    ChildPlan plan;
    plan.rank = world.rank.value * req.nproc + i;
    plan.world_size = static_cast<int>(world_size);
    plan.local_rank = world.local_rank.value * req.nproc + i;
    plan.local_size = world.local_size.value * req.nproc;
    const ChildSlot slot{i, req.nproc, req.output_piped, req.fault_handler, req.max_restarts};
    if (req.node_launcher) {
      // One launcher per node: the node is its "rank" for aml-shim.
      plan.rank = world.node_rank.value;
      plan.world_size = world.node_count.value;
      plan.vars = BuildNodeContract(world, env, slot);
    } else {
      plan.vars = BuildContract(world, env, slot);
      const std::vector<EnvVar> slurm = SlurmTaskVars(world, env, slot);
      plan.vars.insert(plan.vars.end(), slurm.begin(), slurm.end());
    }
    if (req.fabric) {
      FabricPlan storage;
      const auto& fv = FabricVars(*req.fabric, req.gpus, plan.local_rank, env, &storage);
      plan.vars.insert(plan.vars.end(), fv.begin(), fv.end());
    }
    plan.vars.insert(plan.vars.end(), req.socket_vars.begin(), req.socket_vars.end());
    if (!req.flight_dir.empty() && !req.node_launcher) {
      // The first attempt's; a restart's are set as it starts (supervisor.cc).
      ContractBuilder b(env);
      AddFlightVars(env, req.flight_dir, 0, &b);
      plan.vars.insert(plan.vars.end(), b.vars().begin(), b.vars().end());
    }
    if (!req.warm_dir.empty() && !req.node_launcher) {
      ContractBuilder b(env);
      AddWarmLearnVars(env, req.warm_dir, req.flight_dir.empty(), &b);
      plan.vars.insert(plan.vars.end(), b.vars().begin(), b.vars().end());
    }
    if (req.tf_config) {
      auto tf = TfConfigVar(*req.tf_config, plan.rank, env);
      if (!tf.ok()) return tf.error();
      plan.vars.push_back(std::move(*tf));
    }
    plan.argv = BuildArgv(req.command, req.local_rank_arg, plan.vars);
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::vector<std::string> BindToGpuNuma(std::vector<ChildPlan>& plans, const GpuTopology& topo,
                                       std::vector<std::string>* verbose) {
  const std::vector<int> allowed = AllowedCpus();
  std::string problem;
  for (ChildPlan& plan : plans) {
    auto b = ChooseBinding(topo, plan.local_rank);
    if (!b.ok()) {
      if (problem.empty()) problem = b.error().message;
      continue;
    }
    plan.cpus = UsableCpus(b->cpus, allowed);
    if (plan.cpus.empty()) {
      if (problem.empty())
        problem = "--numa-bind: " + b->why + ", none of which this process may use (allowed: " +
                  FormatCpuList(allowed) + "); rank " + std::to_string(plan.rank) +
                  " runs unbound";
      continue;
    }
    if (verbose) verbose->push_back("--numa-bind: rank " + std::to_string(plan.rank) + ": " + b->why);
  }
  std::vector<std::string> warnings = topo.warnings;
  if (!problem.empty()) warnings.push_back(problem);
  return warnings;
}

}  // namespace aml
