#include "shim/rendezvous/world_rendezvous.h"

#include "shim/base/log.h"
#include "shim/base/random_token.h"
#include "shim/net/tcp.h"
#include "shim/rendezvous/mpi_collective.h"

namespace aml {

Result<MasterPlan> RequireRendezvousForTfConfig(bool tf_config, RendezvousMode mode,
                                                const World& world, MasterPlan plan) {
  const auto* known = std::get_if<MasterKnown>(&plan);
  if (!tf_config || world.single_node || !known) return plan;
  if (mode == RendezvousMode::kEnv || !IsMpiLauncher(world.source))
    return Error{"--tf-config on this " + std::to_string(world.node_count.value) +
                 "-node job needs every rank's address and a free port on each host, "
                 "which only the rendezvous gathers: run under an MPI launcher with "
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

std::string Rank0Says(const std::string& who, int rank, int size, const World& world,
                      const std::string& hint) {
  return who + " says rank " + std::to_string(rank) + " of " + std::to_string(size) + ", but " +
         world.rank.why + " and " + world.size.why + hint;
}

}  // namespace

Result<std::unique_ptr<PmixCollective>> AskPmix(const EnvSnapshot& env, World* world,
                                                bool needed) {
  const std::string use = env.GetOr("AML_SHIM_PMIX", "1");
  if (use != "0" && use != "1")
    return Error{"AML_SHIM_PMIX='" + use + "': expected 1 (ask the launcher's PMIx server, the "
                 "default) or 0 (never; the launcher's variables and the MPI rendezvous only)"};
  if (!needed || world->size.value < 2 || !PmixServerOffered(env))
    return std::unique_ptr<PmixCollective>();
  if (use == "0") {
    LogVerbose("AML_SHIM_PMIX=0: the launcher's PMIx server is not asked");
    return std::unique_ptr<PmixCollective>();
  }
  const bool yours = env.Has("AML_SHIM_LIBPMIX");
  bool reached = false;
  auto client = PmixClient::Open(env, PmixClient::kInitS, &reached);
  if (!client.ok()) {
    if (yours) return Error{"PMIx: " + client.error().message};
    const std::string line = "PMIx server offered, but not used: " + client.error().message +
                             "; the world comes from the launcher's variables";
    // No libpmix here is common and harmless; a server that does not
    // answer is the launcher's, and worth a word.
    if (reached) {
      LogWarning(line);
      world->pmix_unanswered = client.error().message;
    } else {
      LogVerbose(line);
    }
    return std::unique_ptr<PmixCollective>();
  }
  auto pmix = PmixCollective::Start(std::move(*client));
  if (!pmix.ok()) return Error{"PMIx: " + pmix.error().message};
  const PmixWorld& p = (*pmix)->world();
  if (p.rank != world->rank.value || p.size != world->size.value)
    return Error{Rank0Says("PMIx (" + p.library + ")", p.rank, p.size, *world,
                           ": is AML_SHIM_LIBPMIX the launcher's PMIx?")};
  const std::string how = "PMIx (" + p.library + ")";
  world->local_rank = {p.local_rank, how + ": pmix.lrank"};
  world->local_size = {p.local_size, how + ": pmix.lpeers"};
  // A node index the launcher's variables prove stays as they give it.
  if (!world->node_rank_exact) {
    world->node_rank = {p.node_rank, how + ": every rank's pmix.nodeid, nodes numbered by "
                                           "their lowest rank"};
    world->node_count = {p.node_count, how + ": nodes hosting this job's ranks"};
    world->node_rank_exact = true;
    world->single_node = p.node_count == 1;
  }
  // Rank 0's host name, for --rendezvous env: not when it resolves to
  // loopback here (a hostname in /etc/hosts as 127.0.1.1, or one that every
  // node shares), which no other node could reach.
  auto ips = ResolveHost("rank 0's host", p.rank0_host);
  if (ips.ok() && !ips->empty() && !IsLoopbackAddress(ips->front()))
    world->rank0_host = Sourced<std::string>{p.rank0_host, how + ": pmix.hname of rank 0"};
  else
    LogVerbose(how + ": rank 0's host '" + p.rank0_host + "' is not used as the master: " +
               (ips.ok() && !ips->empty() ? "it resolves to " + ips->front() + " (loopback) here"
                                          : "it does not resolve here"));
  world->asked_pmix = true;
  LogVerbose(how + ": rank " + std::to_string(p.rank) + " of " + std::to_string(p.size) +
             ", node " + std::to_string(world->node_rank.value) + " of " +
             std::to_string(world->node_count.value) + ", local rank " +
             std::to_string(p.local_rank) + " of " + std::to_string(p.local_size));
  return std::move(*pmix);
}

Result<std::string> ShareJobToken(Collective& c) {
  return c.Broadcast(c.rank() == 0 ? RandomToken() : std::string());
}

Result<World> SettleWorld(const EnvSnapshot& env, const std::string& host, int tf_ports,
                          World world, const MasterPlan& plan, PmixCollective* pmix,
                          std::vector<PeerInfo>* peers, Sourced<std::string>* secret) {
  if (const auto* known = std::get_if<MasterKnown>(&plan)) return WithMaster(world, *known);
  const auto& by = std::get<MasterByRendezvous>(plan);
  if (!pmix && !IsMpiLauncher(world.source))
    return Error{"the rendezvous needs a PMIx server or an MPI launcher, but this rank's world "
                 "comes from " + std::string(LauncherName(world.source)) +
                 ": set --master-addr or MASTER_ADDR"};
  // Open MPI's MPI_Init connects to the same PMIx server: it would fail (or
  // block) the same way, with the library's words instead of ours.
  if (!pmix && !world.pmix_unanswered.empty() &&
      (world.source == Launcher::kOpenMpi || world.source == Launcher::kPmix))
    return Error{"the rendezvous needs the launcher's PMIx server: " + world.pmix_unanswered +
                 "; Open MPI's MPI_Init would meet the same server: set --master-addr or "
                 "MASTER_ADDR"};
  RendezvousRequest req;
  if (pmix) req.label = "PMIx rendezvous";
  if (by.addr) req.master_addr = by.addr->value;
  if (by.port) req.master_port = by.port->value;
  req.tf_ports = tf_ports;
  req.host = host;
  auto res = pmix ? RunRendezvous(*pmix, req) : RunOverMpi(env, world.source, req);
  if (!res.ok()) return res.error();
  if (res->rank != world.rank.value || res->size != world.size.value)
    return Error{Rank0Says("MPI rendezvous: the MPI library", res->rank, res->size, world,
                           ": is AML_SHIM_LIBMPI the launcher's MPI?")};
  const std::string how = req.label + (pmix ? " (pmix.lpeers)" : " (MPI_COMM_TYPE_SHARED)");
  world.local_rank = {res->local_rank, how};
  world.local_size = {res->local_size, how};
  world.node_rank = {res->node_rank, req.label + ": nodes numbered by their lowest rank"};
  world.node_rank_exact = true;
  world.node_count = {res->node_count, req.label};
  world.single_node = res->node_count == 1;
  if (by.addr)
    world.master_addr = {by.addr->value, by.addr->why + "; verified by " + res->why};
  else
    world.master_addr = {res->master_addr, res->why};
  if (by.port)
    world.master_port = *by.port;
  else
    world.master_port = {res->master_port, "chosen free on rank 0 by the " + req.label};
  if (peers) *peers = res->peers;
  if (secret)
    *secret = {res->secret, "the " + req.label + "'s token (sent over " +
                                (pmix ? "PMIx" : "MPI") + " only)"};
  LogVerbose(res->why + ": " + res->master_addr + ":" + std::to_string(res->master_port));
  return world;
}

}  // namespace aml
