#include "shim/app.h"

#include <time.h>
#include <unistd.h>

#include <functional>
#include <iostream>
#include <memory>

#include "ib/fabric_env.h"
#include "ib/probe.h"
#include "ib/report.h"
#include "ib/verbs.h"
#include "launch/error_file.h"
#include "launch/metrics/metrics_door.h"
#include "shim/app_stages.h"
#include "shim/topology/gpu_count.h"
#include "shim/topology/gpu_topology.h"
#include "shim/base/dynlib.h"
#include "shim/base/exit_code.h"
#include "shim/base/fd_limit.h"
#include "shim/base/host_port.h"
#include "shim/base/log.h"
#include "shim/base/text_list.h"
#include "shim/base/version.h"
#include "shim/cli/env_command.h"
#include "shim/cli/options.h"
#include "shim/control/plane.h"
#include "shim/net/tcp.h"
#include "shim/plan/child_plan.h"
#include "shim/plan/socket_iface.h"
#include "shim/plan/tf_config.h"
#include "shim/preflight/membership.h"
#include "shim/preflight/nccl_stage.h"
#include "shim/preflight/preflight.h"
#include "shim/rendezvous/mpi_collective.h"
#include "shim/rendezvous/world_rendezvous.h"
#include "shim/world/master.h"
#include "shim/world/resolve.h"
#include "shim/world/sources.h"
#include "shim/world/spare_world.h"

namespace aml {
namespace {

using app::NcclSetup;
using app::NodePlanner;
using app::Planned;

timespec g_started{};  // CLOCK_REALTIME when Main began

constexpr char kNcclConfPath[] = "/etc/nccl.conf";

int Fail(const Error& error) {
  LogError(error.message);
  return kExitShimFailure;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// ---- Resolve: the launcher's world, who the master is, children per shim.

struct Resolved {
  World world;
  MasterPlan master;
  int nproc = 1;
  // The shim's private directory, named now (made by the supervisor): the
  // ranks' flight-recorder variables name it.
  std::string private_dir;
  // The launcher's PMIx runtime, open until the world is settled.
  std::unique_ptr<PmixCollective> pmix;
};

// Every library aml-shim may load, by its override variable.
constexpr const char* kLibraryOverrides[] = {"AML_SHIM_LIBMPI", "AML_SHIM_LIBPMIX",
                                             "AML_SHIM_LIBCUDART", "AML_SHIM_LIBNCCL",
                                             "AML_SHIM_LIBIBVERBS"};

// Children per shim for --nproc-per-node.
Result<int> ResolveNproc(const Options& o, const EnvSnapshot& env) {
  if (o.nproc_kind == NprocKind::kCount) return o.nproc;
  GpuCount gpus = CountVisibleGpus(env, o.proc_root);
  if (gpus.count > 0) {
    LogVerbose(o.nproc_origin + "=" +
               std::string(o.nproc_kind == NprocKind::kGpu ? "gpu" : "auto") + ": " +
               std::to_string(gpus.count) + " GPUs (" + gpus.why + ")");
    return gpus.count;
  }
  if (o.nproc_kind == NprocKind::kAuto) return 1;
  return Error{o.nproc_origin + "=gpu: no NVIDIA GPU is visible (" + gpus.why +
               "); use a number or 'auto'"};
}

// Who the master is, and whether the rendezvous must find or verify it.
Result<MasterPlan> PlanMaster(const Options& o, const EnvSnapshot& env, const World& world) {
  auto master = ResolveMaster(env, MasterRequest{o.master_addr, o.master_port, o.rendezvous},
                              world);
  if (!master.ok()) return master.error();
  return RequireRendezvousForTfConfig(o.tf_config, o.rendezvous, world, *master);
}

Result<Resolved> Resolve(const Options& o, const EnvSnapshot& env) {
  for (const char* var : kLibraryOverrides) {
    auto lib = CheckLibraryOverride(env, var);
    if (!lib.ok()) return lib.error();
  }
  auto world = ResolveRanks(env);
  if (!world.ok()) return world.error();
  auto plan = PlanMaster(o, env, *world);
  // The launcher's PMIx server is asked only for what the variables lack:
  // an exact NODE_RANK, the master, or the preflight's job secret. Every
  // rank shares these facts, so all ask, or none does.
  const bool needed = !world->node_rank_exact || o.preflight.tcp || !plan.ok() ||
                      std::holds_alternative<MasterByRendezvous>(*plan) ||
                      (WantsControlPlane(o) && world->size.value > 1);
  auto pmix = AskPmix(env, &*world, needed);
  if (!pmix.ok()) return pmix.error();
  if (*pmix) plan = PlanMaster(o, env, *world);
  if (!plan.ok()) return plan.error();
  // One shim alone, no launcher, no port given: nothing else needs to know
  // the port in advance, so a free one (torchrun's --standalone does the
  // same); torchrun's 29500 collides with another job on the machine.
  if (auto* known = std::get_if<MasterKnown>(&*plan);
      known && world->source == Launcher::kSingleton && world->size.value == 1 &&
      known->port.why.rfind("default", 0) == 0)
    if (auto free = ListenAny(0); free.ok())
      known->port = {free->port, "a free port (one shim alone: nothing else needs it before)"};
  if (o.node_launcher && world->local_size.value > 1)
    return Error{"--node-launcher runs one launcher per node, but " + world->local_size.why +
                 " says " + std::to_string(world->local_size.value) +
                 " shims run on this node: start one per node (mpirun --map-by ppr:1:node, "
                 "srun --ntasks-per-node 1)"};
  // A launcher that gives the processes per node (Kubeflow's
  // PET_NPROC_PER_NODE) stands for --nproc-per-node when it is not given;
  // a node's own launcher reads it itself.
  Options counted = o;
  if (!o.nproc_given && !o.node_launcher && world->source == Launcher::kKubeflow)
    if (const std::string* per_node = env.Find("PET_NPROC_PER_NODE")) {
      if (Status st = ParseNproc("PET_NPROC_PER_NODE", *per_node, &counted); !st.ok())
        return st.error();
      LogVerbose("--nproc-per-node from PET_NPROC_PER_NODE=" + *per_node + " (Kubeflow)");
    }
  auto nproc = o.node_launcher ? Result<int>(1) : ResolveNproc(counted, env);
  if (!nproc.ok()) return nproc.error();
  Resolved r;
  r.world = std::move(*world);
  r.master = std::move(*plan);
  r.nproc = *nproc;
  r.pmix = std::move(*pmix);
  r.private_dir = ErrorDirName(env.GetOr("TMPDIR", ""));
  return r;
}

// ---- Plan: what each child gets.


// GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME for a job that spans nodes.
Result<std::vector<EnvVar>> SocketVars(const World& world, const EnvSnapshot& env,
                                       const NcclConf& conf, bool report) {
  if (world.single_node) return std::vector<EnvVar>{};
  // Both chosen by the user: nothing to decide, nothing that could fail.
  if (env.Has("GLOO_SOCKET_IFNAME") &&
      (env.Has("NCCL_SOCKET_IFNAME") || conf.vars.count("NCCL_SOCKET_IFNAME")))
    return std::vector<EnvVar>{};
  auto facts = GatherRouteFacts(world.master_addr.value);
  if (!facts.ok()) {
    // Say where the name came from, and what to do when it was not yours.
    const std::string& why = world.master_addr.why;
    const bool yours = why.rfind("--master-addr", 0) == 0 || why.rfind("MASTER_ADDR", 0) == 0;
    return Error{facts.error().message + " (MASTER_ADDR from " + why + ")" +
                 (yours ? "" : "; set --master-addr to an address every node resolves")};
  }
  auto iface = ChooseSocketIface(*facts, ListAddresses());
  if (!iface.ok()) return iface.error();
  if (report) {
    for (const auto& w : iface->warnings) LogWarning(w);
    if (!iface->ifname.empty()) LogVerbose("socket interface " + iface->ifname + ": " + iface->why);
  }
  return PlanSocketEnv(*iface, env, conf);
}

FabricFacts ProbeFabric(const Options& o, const EnvSnapshot& env, NcclConf conf) {
  FabricFacts f;
  f.report = ProbeSysfs(o.sysfs_root);
  // libibverbs is consulted only where the real sysfs shows devices: it costs
  // milliseconds to load its providers and knows nothing of fixture trees.
  if (o.sysfs_root == "/sys" && !f.report.devices.empty())
    CrossCheckWithVerbs(f.report, QueryVerbs(env));
  f.conf = std::move(conf);
  f.plan = PlanFabric(f.report, env, f.conf);
  return f;
}

// The fabric's one line per node (local rank 0 of a running job), or the
// error of --ib require.
Status ReportFabric(const FabricFacts& f, const Options& o, const World& world, bool report) {
  if (o.ib == IbMode::kRequire && !f.plan.usable)
    return Error{"--ib require: no active InfiniBand or RoCE v2 port (" + f.plan.summary + ")"};
  if (!report) return Ok{};
  // No RDMA hardware at all only matters once traffic leaves the node.
  if (!f.report.devices.empty() || !world.single_node) LogInfo(f.plan.summary);
  else LogVerbose(f.plan.summary);
  for (const auto& w : f.report.warnings) LogWarning(w);
  for (const auto& w : f.plan.warnings) LogWarning(w);
  return Ok{};
}

// Ports derived without talking (single node) are checked on the host that
// will use them; rendezvous ports were found free.
void WarnTfPortsInUse(const std::vector<ChildPlan>& children,
                      const std::vector<std::string>& endpoints) {
  for (const ChildPlan& c : children) {
    const std::string& ep = endpoints[static_cast<size_t>(c.rank)];
    const int port = std::stoi(ep.substr(ep.rfind(':') + 1));
    if (!ListenAny(port).ok())
      LogWarning("--tf-config: port " + std::to_string(port) + " of rank " +
                 std::to_string(c.rank) + " (" + ep + ") is in use on this host");
  }
}

// `peers`: each shim's address and ports from the MPI rendezvous (--tf-config).
// `report`: say what the socket interface and the fabric are (once per
// node; not again when a spare's ranks are planned anew).
Result<Planned> Plan(const Invocation& inv, const Resolved& r, const World& world,
                     const std::vector<PeerInfo>& peers, const EnvSnapshot& env,
                     bool report = true) {
  const Options& o = inv.options;
  const bool running = inv.subcommand == Subcommand::kRun;
  const bool node_reporter = report && running && world.local_rank.value == 0;
  Planned p;
  const NcclConf nccl_conf = ReadNcclConf(env, kNcclConfPath);
  auto socket_vars = SocketVars(world, env, nccl_conf, node_reporter);
  if (!socket_vars.ok()) return socket_vars.error();
  PlanRequest req;
  req.command = inv.command;
  req.nproc = r.nproc;
  req.local_rank_arg = o.local_rank_arg;
  req.socket_vars = std::move(*socket_vars);
  if (o.tf_config) {
    auto eps = TfEndpoints(world, r.nproc, peers);
    if (!eps.ok()) return eps.error();
    req.tf_config = TfConfigSpec{std::move(*eps), o.ps_count};
  }
  std::optional<FabricFacts> fabric;
  if (o.ib != IbMode::kOff) {
    fabric = ProbeFabric(o, env, nccl_conf);
    auto st = ReportFabric(*fabric, o, world, node_reporter);
    if (!st.ok()) return st.error();
    req.fabric = &*fabric;
  }
  // For --numa-bind, and for UCX_NET_DEVICES nearest each child's GPU.
  GpuTopology gpus;
  if (fabric || o.numa_bind) gpus = ReadGpuTopology(env, o.proc_root, o.sysfs_root);
  req.gpus = &gpus;
  // exec in place unless there is something to supervise: several children,
  // output to tag or log, zombies to reap as PID 1, or a PMIx client to hold
  // until the children end (PmixClient).
  p.pid1 = getpid() == 1;
  if (o.metrics_addr) {
    auto addr = ParseMetricsAddr(*o.metrics_addr);
    if (!addr.ok()) return addr.error();
    p.metrics = *addr;
  }
  p.supervise = r.nproc > 1 || p.pid1 || o.log_dir || o.tag_output.value_or(false) ||
                WantsControlPlane(o) || r.pmix != nullptr || o.node_launcher ||
                p.metrics.has_value() || o.dcgm_job_dir.has_value();
  p.tag = o.tag_output.value_or(r.nproc > 1);
  // The hang watchdog and the restart rule judge by the ranks' output: it
  // must pass through aml-shim (untagged for one child unless asked).
  p.pipe_output = r.nproc > 1 || p.tag || o.log_dir.has_value() || o.hang_timeout_s ||
                  o.max_restarts > 0;
  req.output_piped = p.pipe_output;
  req.fault_handler = o.hang_timeout_s.has_value();
  req.max_restarts = o.max_restarts;
  req.node_launcher = o.node_launcher;
  if (WantsFlightRecorder(o)) req.flight_dir = r.private_dir;
  if (o.warm_restart) req.warm_dir = r.private_dir;
  p.flight_dir = req.flight_dir;
  p.private_dir = req.flight_dir.empty() ? req.warm_dir : req.flight_dir;
  auto children = PlanChildren(world, env, req);
  if (!children.ok()) return children.error();
  p.children = std::move(*children);
  if (running && o.tf_config && peers.empty())
    WarnTfPortsInUse(p.children, req.tf_config->endpoints);
  if (running && o.numa_bind) {
    std::vector<std::string> verbose;
    for (const auto& w : BindToGpuNuma(p.children, gpus, &verbose)) LogWarning(w);
    for (const auto& v : verbose) LogVerbose(v);
  }
  return p;
}

// ---- Check: --preflight, 0 to go on, else the exit code.


// `member`: the proof of membership each hello carries (membership.h).
int Check(const Options& o, const World& world, const Planned& p, const EnvSnapshot& env,
          const std::string& host, const Membership& member) {
  if (!o.preflight.tcp) return 0;
  PreflightRequest req;
  req.rank = world.rank.value;
  req.size = world.size.value;
  req.local_rank = world.local_rank.value;
  req.local_size = world.local_size.value;
  req.master_addr = world.master_addr.value;
  req.master_port = world.master_port.value;
  req.host = host;
  req.token = member.token;
  req.prover = member.prover();
  LogVerbose(req.token.empty() ? "preflight: " + member.why
                               : "preflight: hellos carry a digest of " + member.why);
  req.timeout = std::chrono::milliseconds(static_cast<long>(o.preflight_timeout_s * 1000));
  std::unique_ptr<NcclStage> nccl;
  if (o.preflight.nccl) {
    // NCCL sees what the first child will see: NCCL_*, socket and fabric
    // variables included.
    nccl = std::make_unique<NcclStage>(world.node_rank.value, NcclSetup(o, world, p.children, env),
                                       ApplyContract(env, p.children[0].vars));
    req.gpu = nccl.get();
    req.bytes = o.preflight_bytes;
    req.min_busbw = o.min_busbw;
  }
  bool said = false;
  auto pre = RunPreflight(req, &said);
  if (!pre.ok()) {
    // Rank 0 prints the report; a rank that printed its own failure, or
    // that got rank 0's report, only exits (with -v it once said it again:
    // every such line twice).
    if (!said)
      for (const std::string& line : SplitLines(pre.error().message)) LogError(line);
    return kExitShimFailure;
  }
  if (world.rank.value == 0) {
    LogVerbose("preflight tcp: all " + std::to_string(world.size.value) + " ranks reached " +
               world.master_addr.value + ":" + std::to_string(world.master_port.value) + " (" +
               std::to_string(pre->connections) + " connection(s) to rank 0)");
    for (const auto& line : pre->report) LogInfo(line);
  }
  return 0;
}

int Probe(const Options& o, const EnvSnapshot& env) {
  FabricFacts f = ProbeFabric(o, env, ReadNcclConf(env, kNcclConfPath));
  std::cout << (o.json ? FormatProbeJson(f.report, f.plan) : FormatProbeTable(f.report, f.plan))
            << std::flush;
  return 0;
}

}  // namespace

int Main(const std::vector<std::string>& args, const EnvSnapshot& env) {
  clock_gettime(CLOCK_REALTIME, &g_started);
  RaiseFdLimit();
  auto inv = ParseCommandLine(args, env);
  if (!inv.ok()) return Fail(inv.error());
  const Options& o = inv->options;
  SetVerbosity(o.verbosity);
  if (inv->help) {
    std::cout << HelpText();
    return 0;
  }
  if (inv->version) {
    std::cout << "aml-shim " << kVersion << "\n";
    return 0;
  }
  if (inv->subcommand == Subcommand::kProbe) return Probe(o, env);

  auto resolved = Resolve(o, env);
  if (!resolved.ok()) return Fail(resolved.error());
  const std::string host = HostName();
  std::vector<PeerInfo> peers;
  Sourced<std::string> rendezvous_token;
  PmixCollective* pmix = resolved->pmix.get();
  auto world = SettleWorld(env, host, o.tf_config ? resolved->nproc : 0, resolved->world,
                           resolved->master, pmix, &peers, &rendezvous_token);
  if (!world.ok()) return Fail(world.error());
  Membership shared{rendezvous_token.value, rendezvous_token.why, nullptr};
  const bool running = inv->subcommand == Subcommand::kRun;
  if (pmix && running && (o.preflight.tcp || WantsControlPlane(o)) && shared.token.empty()) {
    auto token = ShareJobToken(*pmix);
    if (!token.ok()) return Fail(Error{"PMIx: " + token.error().message});
    shared = {*token, "rank 0's random token (sent over PMIx only)", nullptr};
  }
  // The PMIx client is held until the ranks' commands end (PmixClient's
  // destructor, at return): a command's own PMIx_Init connects as the same
  // rank beside it, and this rank never finalizes and initialises again.
  if (!running) resolved->pmix.reset();
  if (running)
    for (const auto& w : world->warnings) LogWarning(w);
  auto planned = Plan(*inv, *resolved, *world, peers, env);
  if (!planned.ok()) return Fail(planned.error());
  // --spares: the preflight checks every node, spares too (`planned`, the
  // launcher's world); the ranks run in the world of the NODE_RANKs
  // (docs/control-plane.md, "Spares and retirement").
  if (Status st = CheckSpares(*world, o.spares); !st.ok()) return Fail(st.error());
  const NodePlanner plan_node = [&](int node) {
    return Plan(*inv, *resolved, HolderWorld(*world, o.spares, node), peers, env, false);
  };
  Result<Planned> ranks_plan = Error{""};
  if (o.spares > 0) {
    const bool spare = IsSpare(*world, o.spares);
    ranks_plan = plan_node(spare ? 0 : world->rank.value);
    if (!ranks_plan.ok()) return Fail(ranks_plan.error());
    world->notes.push_back(
        "--spares " + std::to_string(o.spares) + ": of the launcher's " +
        std::to_string(world->size.value) + " shims the first " +
        std::to_string(world->size.value - o.spares) + " hold NODE_RANK 0-" +
        std::to_string(world->size.value - o.spares - 1) + " and the last " +
        std::to_string(o.spares) + " wait; " +
        (spare ? "this shim (rank " + std::to_string(world->rank.value) +
                     ") is a spare: it starts no ranks until it takes a retired node's "
                     "NODE_RANK"
               : "this shim holds NODE_RANK " + std::to_string(world->rank.value)));
  } else {
    ranks_plan = *planned;
  }
  if (!running) {
    const bool spare = IsSpare(*world, o.spares);
    const World shown =
        o.spares > 0 && !spare ? HolderWorld(*world, o.spares, world->rank.value) : *world;
    std::cout << FormatEnv(shown, spare ? std::vector<ChildPlan>{} : ranks_plan->children, o)
              << std::flush;
    return 0;
  }
  // The proof of membership, once for the preflight and the control plane
  // (a secret too short to be one stops only a job that needs it).
  Membership member;
  if (o.preflight.tcp || (WantsControlPlane(o) && world->size.value > 1)) {
    auto m = MembershipToken(env, shared);
    if (!m.ok()) return Fail(m.error());
    member = std::move(*m);
  }
  if (int code = Check(o, *world, *planned, env, host, member); code != 0) return code;
  return app::Run(o, *world, *ranks_plan, env, host, member, plan_node, g_started);
}

}  // namespace aml
