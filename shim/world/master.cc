#include "shim/world/master.h"

#include "shim/base/host_port.h"
#include "shim/base/parse_int.h"
#include "shim/world/port.h"
#include "shim/world/sources.h"

namespace aml {

Result<MasterPlan> ResolveMaster(const EnvSnapshot& env, const MasterRequest& req,
                                 const World& world) {
  // Parse AzureML's variable whenever it is present: a malformed one is an
  // error even when another rule would win.
  std::optional<HostPort> az_master;
  if (const std::string* v = env.Find("AZ_BATCH_MASTER_NODE")) {
    auto hp = ParseHostPort("AZ_BATCH_MASTER_NODE", *v);
    if (!hp.ok()) return hp.error();
    az_master = *hp;
  }
  const std::string* az_single = env.Find("AZ_BATCHAI_MPI_MASTER_NODE");
  if (az_single && az_single->empty())
    return Error{"AZ_BATCHAI_MPI_MASTER_NODE='' is an empty host name"};

  // An empty MASTER_ADDR would reach the children as it is (a value you set
  // is never replaced) while the checks ran against another address.
  if (const std::string* m = env.Find("MASTER_ADDR"); m && m->empty())
    return Error{"MASTER_ADDR is set but empty: unset it, or set it (or --master-addr) to "
                 "rank 0's address"};
  // Checked wherever they are set, on one node too: a newline or escape
  // sequence reaches the children and the reports otherwise.
  for (const char* var : {"MASTER_ADDR", "AZ_BATCHAI_MPI_MASTER_NODE", "PET_MASTER_ADDR"})
    if (const std::string* m = env.Find(var))
      if (Status ok = CheckHost(var, *m); !ok.ok()) return ok.error();
  bool from_az_multi = false;
  std::optional<Sourced<std::string>> addr;
  if (req.addr) {
    addr = {*req.addr, "--master-addr"};
  } else if (env.HasNonEmpty("MASTER_ADDR")) {
    addr = {*env.Find("MASTER_ADDR"), "MASTER_ADDR (already set)"};
  } else if (world.source == Launcher::kKubeflow && env.HasNonEmpty("PET_MASTER_ADDR")) {
    addr = {*env.Find("PET_MASTER_ADDR"), "PET_MASTER_ADDR (Kubeflow's, torchrun's default)"};
  } else if (world.single_node) {
    if (az_single)
      addr = {*az_single, "single node: AZ_BATCHAI_MPI_MASTER_NODE=" + *az_single};
    else
      addr = {"127.0.0.1", "single node (" + world.node_count.why + ")"};
  } else if (az_master) {
    addr = {az_master->host,
            "host of AZ_BATCH_MASTER_NODE=" + *env.Find("AZ_BATCH_MASTER_NODE")};
    from_az_multi = true;
  } else if (world.hosts && !world.hosts->value.empty()) {
    addr = {world.hosts->value.front(), "first host of " + world.hosts->why};
  } else if (world.rank0_host && req.rendezvous == RendezvousMode::kEnv) {
    // Unverified, as a node list is: the rendezvous, where allowed, finds an
    // address every rank reached instead.
    addr = *world.rank0_host;
  }

  // A NODE_RANK the variables (and PMIx) cannot prove is computed by the rendezvous,
  // never guessed: every rank sees the same facts, so all decide alike.
  if (!world.node_rank_exact) {
    const std::string why = "NODE_RANK cannot be proven for this job: " + world.node_rank.why;
    if (req.rendezvous == RendezvousMode::kEnv)
      return Error{why + ", no PMIx server gave it, and --rendezvous env forbids the "
                   "rendezvous that computes it: set NODE_RANK on every rank, or use "
                   "--rendezvous auto"};
    if (!IsMpiLauncher(world.source))
      return Error{why + ", and " + LauncherName(world.source) +
                   " is not an MPI launcher to compute it with: set NODE_RANK on every rank"};
  }
  const bool rendezvous =
      req.rendezvous == RendezvousMode::kMpi ||
      (req.rendezvous == RendezvousMode::kAuto && (!addr || !world.node_rank_exact));
  if (!addr && !rendezvous) {
    return Error{"nothing names the master of this " +
                 std::to_string(world.node_count.value) +
                 "-node job (no --master-addr, MASTER_ADDR or AZ_BATCH_MASTER_NODE, no "
                 "node list of this job's own launcher, no rank 0 host from PMIx that "
                 "resolves to other than loopback) and --rendezvous env forbids the "
                 "rendezvous: set --master-addr or MASTER_ADDR"};
  }

  std::optional<Sourced<int>> port;
  if (req.port) {
    port = {*req.port, "--master-port"};
  } else if (const std::string* p = env.Find("MASTER_PORT")) {
    auto n = ParseInt("MASTER_PORT", *p, 1, 65535);
    if (!n.ok()) return n.error();
    port = {static_cast<int>(*n), "MASTER_PORT (already set)"};
  } else if (const std::string* pp = env.Find("PET_MASTER_PORT");
             pp && world.source == Launcher::kKubeflow) {
    auto n = ParseInt("PET_MASTER_PORT", *pp, 1, 65535);
    if (!n.ok()) return n.error();
    port = {static_cast<int>(*n), "PET_MASTER_PORT (Kubeflow's, torchrun's default)"};
  } else if (world.single_node && az_single) {
    port = {kAzureSingleNodePort, "AzureML single-node port (as aml_mpienv.py)"};
  } else if (from_az_multi || (!world.single_node && az_master)) {
    port = {kAzureMultiNodePort, "AzureML multi-node port (as aml_mpienv.py; the port in "
                                 "AZ_BATCH_MASTER_NODE is not used)"};
  } else if (!addr) {
    // Chosen free on rank 0 by the MPI rendezvous.
  } else if (auto job = ReadJobId(env)) {
    port = {DerivedPort(job->value), "derived from the job id (" + job->why + ")"};
  } else {
    port = {kDefaultMasterPort, "default (no job id to derive one from)"};
  }
  if (rendezvous) return MasterPlan{MasterByRendezvous{addr, port}};
  return MasterPlan{MasterKnown{*addr, *port}};
}

World WithMaster(World world, const MasterKnown& master) {
  world.master_addr = master.addr;
  world.master_port = master.port;
  return world;
}

}  // namespace aml
