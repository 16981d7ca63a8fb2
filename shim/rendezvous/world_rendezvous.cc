#include "shim/rendezvous/world_rendezvous.h"

#include "shim/base/log.h"
#include "shim/rendezvous/mpi_collective.h"

namespace aml {

Result<MasterPlan> RequireRendezvousForTfConfig(bool tf_config, RendezvousMode mode,
                                                const World& world, MasterPlan plan) {
  const auto* known = std::get_if<MasterKnown>(&plan);
  if (!tf_config || world.single_node || !known) return plan;
  if (mode == RendezvousMode::kEnv || !IsMpiLauncher(world.source))
    return Error{"--tf-config on this " + std::to_string(world.node_count.value) +
                 "-node job needs every rank's address and a free port on each host, "
                 "which only MPI rendezvous gathers: run under an MPI launcher with "
                 "--rendezvous auto or mpi" +
                 std::string(mode == RendezvousMode::kEnv ? " (--rendezvous env forbids it)"
                                                          : "")};
  return MasterPlan{MasterByRendezvous{known->addr, known->port}};
}

namespace {

Result<RendezvousResult> RunOverMpi(const EnvSnapshot& env, Launcher source,
                                    const RendezvousRequest& req) {
  auto mpi = OpenMpiCollective(env, source);
  if (!mpi.ok()) return Error{"MPI rendezvous: " + mpi.error().message};
  // The collective's destructor calls MPI_Finalize on return, before anything
  // is exec'd or spawned.
  return RunRendezvous(**mpi, req);
}

}  // namespace

Result<World> SettleWorld(const EnvSnapshot& env, const std::string& host, int tf_ports,
                          World world, const MasterPlan& plan, std::vector<PeerInfo>* peers,
                          std::string* secret) {
  if (const auto* known = std::get_if<MasterKnown>(&plan)) return WithMaster(world, *known);
  const auto& by = std::get<MasterByRendezvous>(plan);
  if (!IsMpiLauncher(world.source))
    return Error{"MPI rendezvous needs an MPI launcher, but this rank's world comes from " +
                 std::string(LauncherName(world.source)) + ": set --master-addr or MASTER_ADDR"};
  RendezvousRequest req;
  if (by.addr) req.master_addr = by.addr->value;
  if (by.port) req.master_port = by.port->value;
  req.tf_ports = tf_ports;
  req.host = host;
  auto res = RunOverMpi(env, world.source, req);
  if (!res.ok()) return res.error();
  if (res->rank != world.rank.value || res->size != world.size.value)
    return Error{"MPI rendezvous: the MPI library says rank " + std::to_string(res->rank) +
                 " of " + std::to_string(res->size) + ", but " + world.rank.why + " and " +
                 world.size.why + ": is AML_SHIM_LIBMPI the launcher's MPI?"};
  const std::string how = "MPI rendezvous (MPI_COMM_TYPE_SHARED)";
  world.local_rank = {res->local_rank, how};
  world.local_size = {res->local_size, how};
  world.node_rank = {res->node_rank, "MPI rendezvous: nodes numbered by their lowest rank"};
  world.node_rank_exact = true;
  world.node_count = {res->node_count, "MPI rendezvous"};
  world.single_node = res->node_count == 1;
  if (by.addr)
    world.master_addr = {by.addr->value, by.addr->why + "; verified by " + res->why};
  else
    world.master_addr = {res->master_addr, res->why};
  if (by.port)
    world.master_port = *by.port;
  else
    world.master_port = {res->master_port, "chosen free on rank 0 by MPI rendezvous"};
  if (peers) *peers = res->peers;
  if (secret) *secret = res->secret;
  LogVerbose(res->why + ": " + res->master_addr + ":" + std::to_string(res->master_port));
  return world;
}

}  // namespace aml
