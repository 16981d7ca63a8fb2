#include "shim/world_rendezvous.h"

#include "shim/log.h"
#include "shim/mpi_collective.h"

namespace aml {

bool IsMpiSource(const std::string& source) {
  return source == "Open MPI" || source == "PMIx" || source == "MPICH/Intel MPI (Hydra)" ||
         source == "MVAPICH2";
}

Status RequireRendezvousForTfConfig(const Options& options, World& world) {
  if (!options.tf_config || world.single_node || world.needs_rendezvous) return Ok{};
  if (options.rendezvous == Rendezvous::kEnv || !IsMpiSource(world.source))
    return Error{"--tf-config on this " + std::to_string(world.node_count.value) +
                 "-node job needs every rank's address and a free port on each host, "
                 "which only MPI rendezvous gathers: run under an MPI launcher with "
                 "--rendezvous auto or mpi" +
                 std::string(options.rendezvous == Rendezvous::kEnv
                                 ? " (--rendezvous env forbids it)" : "")};
  world.needs_rendezvous = true;
  return Ok{};
}

Status RendezvousIfNeeded(const EnvSnapshot& env, const std::string& host, int tf_ports,
                          World& world, std::vector<PeerInfo>* peers) {
  if (!world.needs_rendezvous) return Ok{};
  if (!IsMpiSource(world.source))
    return Error{"MPI rendezvous needs an MPI launcher, but this rank's world comes from " +
                 world.source + ": set --master-addr or MASTER_ADDR"};
  RendezvousRequest req;
  if (!world.master_addr.value.empty()) req.master_addr = world.master_addr.value;
  if (world.master_port.value > 0) req.master_port = world.master_port.value;
  req.tf_ports = tf_ports;
  req.host = host;
  Result<RendezvousResult> res = Error{""};
  {
    auto mpi = OpenMpiCollective(env, world.source);
    if (!mpi.ok()) return Error{"MPI rendezvous: " + mpi.error().message};
    res = RunRendezvous(**mpi, req);
    // The collective's destructor calls MPI_Finalize here, before anything
    // is exec'd or spawned.
  }
  if (!res.ok()) return res.error();
  if (res->rank != world.rank.value || res->size != world.size.value)
    return Error{"MPI rendezvous: the MPI library says rank " + std::to_string(res->rank) +
                 " of " + std::to_string(res->size) + ", but " + world.rank.why + " and " +
                 world.size.why + ": is AML_SHIM_LIBMPI the launcher's MPI?"};
  const std::string how = "MPI rendezvous (MPI_COMM_TYPE_SHARED)";
  world.local_rank = {res->local_rank, how};
  world.local_size = {res->local_size, how};
  world.node_rank = {res->node_rank, "MPI rendezvous: nodes numbered by their lowest rank"};
  world.node_count = {res->node_count, "MPI rendezvous"};
  world.single_node = res->node_count == 1;
  if (world.master_addr.value.empty())
    world.master_addr = {res->master_addr, res->why};
  else
    world.master_addr.why += "; verified by " + res->why;
  if (world.master_port.value == 0)
    world.master_port = {res->master_port, "chosen free on rank 0 by MPI rendezvous"};
  if (peers) *peers = res->peers;
  LogVerbose(res->why + ": " + res->master_addr + ":" + std::to_string(res->master_port));
  return Ok{};
}

}  // namespace aml
