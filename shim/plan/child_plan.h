// What this shim will start: one ChildPlan per child, typed (rank, local
// rank, sizes, CPUs) for the stages that need numbers, with the variables and
// argv the child gets. Built once (PlanChildren); never parsed back.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ib/fabric.h"
#include "ib/fabric_env.h"
#include "shim/topology/gpu_topology.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/env_var.h"
#include "shim/base/result.h"
#include "shim/world/world.h"

namespace aml {

struct ChildPlan {
  int rank = 0, world_size = 1;        // RANK, WORLD_SIZE
  int local_rank = 0, local_size = 1;  // LOCAL_RANK, LOCAL_WORLD_SIZE
  std::vector<EnvVar> vars;            // in the order `env` prints them
  std::vector<std::string> argv;
  std::vector<int> cpus;  // --numa-bind: the CPUs to bind to (empty: unbound)
};

// The fabric facts a plan needs (--ib auto|require).
struct FabricFacts {
  FabricReport report;
  NcclConf conf;
  FabricPlan plan;  // without a GPU's NUMA node
};

struct TfConfigSpec {
  std::vector<std::string> endpoints;  // host:port of every process, by RANK
  int ps_count = 0;
};

struct PlanRequest {
  std::vector<std::string> command;
  int nproc = 1;              // children of this shim
  bool output_piped = false;  // aml-shim reads the children's output
  bool fault_handler = false; // --hang-timeout (contract.h)
  int max_restarts = 0;       // --max-restarts (contract.h)
  bool local_rank_arg = false;
  std::vector<EnvVar> socket_vars;          // GLOO/NCCL_SOCKET_IFNAME
  const FabricFacts* fabric = nullptr;      // null: --ib off
  const GpuTopology* gpus = nullptr;        // for UCX's nearest port
  std::optional<TfConfigSpec> tf_config;    // --tf-config
  bool node_launcher = false;               // --node-launcher: the node's contract only
  // --flight-recorder auto with --hang-timeout: the shim's private
  // directory, where the recorder's variables point (launch/flight/fr_env.h;
  // "": none are set).
  std::string flight_dir;
  // --warm-restart: the shim's private directory, where the agent writes
  // each rank's modules (AddWarmLearnVars; "": not set).
  std::string warm_dir;
};

// One plan per child. Errors when the job's size does not fit (WORLD_SIZE
// past what a rank number can hold) or TF_CONFIG cannot be built.
Result<std::vector<ChildPlan>> PlanChildren(const World& world, const EnvSnapshot& env,
                                            const PlanRequest& req);

// --numa-bind: fills each plan's CPUs from its GPU's NUMA node; the returned
// warnings (one per shim at most) say which children run unbound and why.
std::vector<std::string> BindToGpuNuma(std::vector<ChildPlan>& plans, const GpuTopology& topo,
                                       std::vector<std::string>* verbose);

}  // namespace aml
