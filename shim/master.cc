#include "shim/master.h"

#include "shim/host_port.h"
#include "shim/parse_int.h"
#include "shim/port.h"
#include "shim/sources.h"

namespace aml {

Status ResolveMaster(const EnvSnapshot& env, const Options& options,
                     World& world) {
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

  bool addr_known = true;
  bool from_az_multi = false;
  Sourced<std::string>& addr = world.master_addr;
  if (options.master_addr) {
    addr = {*options.master_addr, "--master-addr"};
  } else if (env.HasNonEmpty("MASTER_ADDR")) {
    addr = {*env.Find("MASTER_ADDR"), "MASTER_ADDR (already set)"};
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
  } else {
    addr_known = false;
  }

  world.needs_rendezvous =
      options.rendezvous == Rendezvous::kMpi ||
      (!addr_known && options.rendezvous == Rendezvous::kAuto);
  if (!addr_known && !world.needs_rendezvous) {
    return Error{"nothing names the master of this " +
                 std::to_string(world.node_count.value) +
                 "-node job (MASTER_ADDR, AZ_BATCH_MASTER_NODE and Slurm's "
                 "node list are unset) and --rendezvous env forbids MPI: set "
                 "--master-addr or MASTER_ADDR"};
  }

  Sourced<int>& port = world.master_port;
  if (options.master_port) {
    port = {*options.master_port, "--master-port"};
  } else if (const std::string* p = env.Find("MASTER_PORT")) {
    auto n = ParseInt("MASTER_PORT", *p, 1, 65535);
    if (!n.ok()) return n.error();
    port = {static_cast<int>(*n), "MASTER_PORT (already set)"};
  } else if (world.single_node && az_single) {
    port = {54965, "AzureML single-node port (as aml_mpienv.py)"};
  } else if (from_az_multi || (!world.single_node && az_master)) {
    port = {6105, "AzureML multi-node port (as aml_mpienv.py; the port in "
                  "AZ_BATCH_MASTER_NODE is not used)"};
  } else if (!addr_known) {
    port = {0, "chosen free on rank 0 by MPI rendezvous"};
  } else if (auto job = ReadJobId(env)) {
    port = {DerivedPort(job->value),
            "derived from the job id (" + job->why + ")"};
  } else {
    port = {kDefaultMasterPort, "default (no job id to derive one from)"};
  }
  if (!addr_known) addr = {"", "found by MPI rendezvous"};
  return Ok{};
}

}  // namespace aml
