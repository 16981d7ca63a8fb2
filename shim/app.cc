#include "shim/app.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include "ib/fabric_env.h"
#include "ib/probe.h"
#include "ib/report.h"
#include "ib/socket_iface.h"
#include "ib/verbs.h"
#include "launch/cpu_affinity.h"
#include "launch/cpu_list.h"
#include "launch/gpu_count.h"
#include "launch/gpu_topology.h"
#include "launch/supervisor.h"
#include "shim/contract.h"
#include "shim/env_command.h"
#include "shim/exec.h"
#include "shim/log.h"
#include "shim/master.h"
#include "shim/options.h"
#include "shim/nccl_stage.h"
#include "shim/preflight.h"
#include "shim/resolve.h"
#include "shim/tcp.h"
#include "shim/text_list.h"
#include "shim/tf_config.h"
#include "shim/version.h"
#include "shim/world_rendezvous.h"

namespace aml {
namespace {

int Fail(const std::string& message) {
  LogError(message);
  return kExitShimFailure;
}

// GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME for a job that spans nodes.
Result<std::vector<EnvVar>> SocketVars(const World& world, const EnvSnapshot& env,
                                       const NcclConf& conf, bool report) {
  if (world.single_node) return std::vector<EnvVar>{};
  // Both chosen by the user: nothing to decide, nothing that could fail.
  if (env.Has("GLOO_SOCKET_IFNAME") &&
      (env.Has("NCCL_SOCKET_IFNAME") || conf.vars.count("NCCL_SOCKET_IFNAME")))
    return std::vector<EnvVar>{};
  auto facts = GatherRouteFacts(world.master_addr.value);
  if (!facts.ok()) return facts.error();
  auto iface = ChooseSocketIface(*facts, ListAddresses());
  if (!iface.ok()) return iface.error();
  if (report) {
    for (const auto& w : iface->warnings) LogWarning(w);
    if (!iface->ifname.empty()) LogVerbose("socket interface " + iface->ifname + ": " + iface->why);
  }
  return PlanSocketEnv(*iface, env, conf);
}

// TF_CONFIG of child `index` (RANK `rank`), as a default.
Result<EnvVar> TfConfigVar(const std::vector<std::string>& endpoints, const Options& o,
                           int rank, const EnvSnapshot& env) {
  auto json = BuildTfConfig(endpoints, o.ps_count, rank);
  if (!json.ok()) return json.error();
  ContractBuilder b(env);
  b.Default("TF_CONFIG", *json, "--tf-config: " + std::to_string(endpoints.size()) +
                                   " tasks, " + std::to_string(o.ps_count) + " ps");
  return b.vars().front();
}

// Children per shim for --nproc-per-node.
Result<int> ResolveNproc(const Options& o, const EnvSnapshot& env) {
  if (o.nproc_kind == NprocKind::kCount) return o.nproc;
  GpuCount gpus = CountVisibleGpus(env, o.proc_root);
  if (gpus.count > 0) {
    LogVerbose("--nproc-per-node " +
               std::string(o.nproc_kind == NprocKind::kGpu ? "gpu" : "auto") + ": " +
               std::to_string(gpus.count) + " GPUs (" + gpus.why + ")");
    return gpus.count;
  }
  if (o.nproc_kind == NprocKind::kAuto) return 1;
  return Error{"--nproc-per-node=gpu: no NVIDIA GPU is visible (" + gpus.why +
               "); use a number or 'auto'"};
}

// --numa-bind: each child's CPUs (empty: unbound), with one warning per
// shim when a child cannot be bound.
std::vector<std::vector<int>> NumaBinding(const std::vector<ChildPlan>& plans,
                                          const GpuTopology& topo, bool report) {
  std::vector<std::vector<int>> cpus(plans.size());
  const std::vector<int> allowed = AllowedCpus();
  std::string problem;
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string rank = ValueOf(plans[i].vars, "RANK");
    auto b = ChooseBinding(topo, std::stoi(ValueOf(plans[i].vars, "LOCAL_RANK")));
    if (!b.ok()) {
      if (problem.empty()) problem = b.error().message;
      continue;
    }
    cpus[i] = UsableCpus(b->cpus, allowed);
    if (cpus[i].empty()) {
      if (problem.empty())
        problem = "--numa-bind: " + b->why + ", none of which this process may use (allowed: " +
                  FormatCpuList(allowed) + "); rank " + rank + " runs unbound";
      continue;
    }
    if (report) LogVerbose("--numa-bind: rank " + rank + ": " + b->why);
  }
  if (report) {
    for (const auto& w : topo.warnings) LogWarning(w);
    if (!problem.empty()) LogWarning(problem);
  }
  return cpus;
}

struct Fabric {
  FabricReport report;
  NcclConf conf;
  FabricPlan plan;  // without a GPU's NUMA node
};

Fabric ProbeFabric(const Options& o, const EnvSnapshot& env, NcclConf conf) {
  Fabric f;
  f.report = ProbeSysfs(o.sysfs_root);
  // libibverbs is consulted only where the real sysfs shows devices: it costs
  // milliseconds to load its providers and knows nothing of fixture trees.
  if (o.sysfs_root == "/sys" && !f.report.devices.empty())
    CrossCheckWithVerbs(f.report, QueryVerbs());
  f.conf = std::move(conf);
  f.plan = PlanFabric(f.report, env, f.conf);
  return f;
}

// The NCCL worker's job: one slot per child, each on the GPU of its
// LOCAL_RANK, with its ranks in the node's and the world's communicators.
WorkerSetup NcclSetup(const Options& o, const World& world, const std::vector<ChildPlan>& plans) {
  WorkerSetup setup;
  setup.bytes = o.preflight_bytes;
  setup.make_node_id = world.local_rank.value == 0;
  setup.make_world_id = world.rank.value == 0 && !world.single_node;
  for (const ChildPlan& p : plans) {
    WorkerSlot s;
    s.device = s.node_rank = std::stoi(ValueOf(p.vars, "LOCAL_RANK"));
    s.node_size = std::stoi(ValueOf(p.vars, "LOCAL_WORLD_SIZE"));
    s.world_rank = std::stoi(ValueOf(p.vars, "RANK"));
    s.world_size = std::stoi(ValueOf(p.vars, "WORLD_SIZE"));
    setup.slots.push_back(s);
  }
  return setup;
}

// --preflight: 0 to go on, else the exit code.
int RunPreflightStage(const Options& o, const World& world, const std::vector<ChildPlan>& plans,
                      const EnvSnapshot& env, const std::string& host) {
  PreflightRequest req;
  req.rank = world.rank.value;
  req.size = world.size.value;
  req.master_addr = world.master_addr.value;
  req.master_port = world.master_port.value;
  req.host = host;
  req.timeout = std::chrono::milliseconds(static_cast<long>(o.preflight_timeout_s * 1000));
  std::unique_ptr<NcclStage> nccl;
  if (o.preflight.nccl) {
    // NCCL sees what the first child will see: NCCL_*, socket and fabric
    // variables included.
    nccl = std::make_unique<NcclStage>(world.node_rank.value, NcclSetup(o, world, plans),
                                       ApplyContract(env, plans[0].vars));
    req.gpu = nccl.get();
    req.bytes = o.preflight_bytes;
    req.min_busbw = o.min_busbw;
  }
  bool said = false;
  auto pre = RunPreflight(req, &said);
  if (!pre.ok()) {
    // Rank 0 prints the report; the others only exit.
    for (const std::string& line : SplitLines(pre.error().message)) {
      if (said) LogVerbose(line);
      else LogError(line);
    }
    return kExitShimFailure;
  }
  if (world.rank.value == 0) {
    LogVerbose("preflight tcp: all " + std::to_string(world.size.value) + " ranks reached " +
               world.master_addr.value + ":" + std::to_string(world.master_port.value));
    for (const auto& line : pre->report) LogInfo(line);
  }
  return 0;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace

int Main(const std::vector<std::string>& args, const EnvSnapshot& env) {
  auto inv = ParseCommandLine(args, env);
  if (!inv.ok()) return Fail(inv.error().message);
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
  const NcclConf nccl_conf = ReadNcclConf(env, "/etc/nccl.conf");
  if (inv->subcommand == Subcommand::kProbe) {
    Fabric f = ProbeFabric(o, env, nccl_conf);
    std::cout << (o.json ? FormatProbeJson(f.report, f.plan)
                         : FormatProbeTable(f.report, f.plan))
              << std::flush;
    return 0;
  }
  auto world = ResolveRanks(env);
  if (!world.ok()) return Fail(world.error().message);
  auto master = ResolveMaster(env, o, *world);
  if (!master.ok()) return Fail(master.error().message);
  auto tf_needs = RequireRendezvousForTfConfig(o, *world);
  if (!tf_needs.ok()) return Fail(tf_needs.error().message);
  auto nproc = ResolveNproc(o, env);
  if (!nproc.ok()) return Fail(nproc.error().message);
  const std::string host = HostName();
  std::vector<PeerInfo> peers;
  auto rdv = RendezvousIfNeeded(env, host, o.tf_config ? *nproc : 0, *world, &peers);
  if (!rdv.ok()) return Fail(rdv.error().message);
  const bool running = inv->subcommand == Subcommand::kRun;
  if (running)
    for (const auto& w : world->warnings) LogWarning(w);

  auto socket_vars = SocketVars(*world, env, nccl_conf, running && world->local_rank.value == 0);
  if (!socket_vars.ok()) return Fail(socket_vars.error().message);
  std::vector<std::string> tf_endpoints;
  if (o.tf_config) {
    auto eps = TfEndpoints(*world, *nproc, peers);
    if (!eps.ok()) return Fail(eps.error().message);
    tf_endpoints = std::move(*eps);
  }
  std::optional<Fabric> fabric;
  if (o.ib != IbMode::kOff) {
    fabric = ProbeFabric(o, env, nccl_conf);
    const Fabric& f = *fabric;
    if (o.ib == IbMode::kRequire && !f.plan.usable)
      return Fail("--ib require: no active InfiniBand or RoCE v2 port (" + f.plan.summary + ")");
    // One line per node, not one per rank.
    if (running && world->local_rank.value == 0) {
      // No RDMA hardware at all only matters once traffic leaves the node.
      if (!f.report.devices.empty() || !world->single_node) LogInfo(f.plan.summary);
      else LogVerbose(f.plan.summary);
      for (const auto& w : f.report.warnings) LogWarning(w);
      for (const auto& w : f.plan.warnings) LogWarning(w);
    }
  }
  // For --numa-bind, and for UCX_NET_DEVICES nearest each child's GPU.
  GpuTopology gpus;
  if (fabric || o.numa_bind) gpus = ReadGpuTopology(env, o.proc_root, o.sysfs_root);

  const bool pid1 = getpid() == 1;
  // exec in place unless there is something to supervise: several children,
  // output to tag or log, or zombies to reap as PID 1.
  const bool supervise = *nproc > 1 || pid1 || o.log_dir || o.tag_output.value_or(false);
  const bool tag = o.tag_output.value_or(*nproc > 1);
  const bool pipe_output = *nproc > 1 || tag || o.log_dir.has_value();

  std::vector<ChildPlan> plans;
  for (int i = 0; i < *nproc; ++i) {
    ChildPlan plan;
    plan.vars = BuildContract(*world, env, ChildSlot{i, *nproc, pipe_output});
    if (fabric) {
      std::optional<int> gpu_numa;
      size_t local = std::stoul(ValueOf(plan.vars, "LOCAL_RANK"));
      if (local < gpus.gpus.size() && gpus.gpus[local].numa_node >= 0)
        gpu_numa = gpus.gpus[local].numa_node;
      const std::vector<EnvVar>& fv =
          gpu_numa ? PlanFabric(fabric->report, env, fabric->conf, gpu_numa).vars
                   : fabric->plan.vars;
      plan.vars.insert(plan.vars.end(), fv.begin(), fv.end());
    }
    plan.vars.insert(plan.vars.end(), socket_vars->begin(), socket_vars->end());
    if (o.tf_config) {
      const int rank = std::stoi(ValueOf(plan.vars, "RANK"));
      auto tf = TfConfigVar(tf_endpoints, o, rank, env);
      if (!tf.ok()) return Fail(tf.error().message);
      plan.vars.push_back(std::move(*tf));
      // Ports derived without talking (single node) are checked here, on
      // the host that will use them; rendezvous ports were found free.
      if (peers.empty() && running) {
        const std::string& ep = tf_endpoints[static_cast<size_t>(rank)];
        int port = std::stoi(ep.substr(ep.rfind(':') + 1));
        if (!ListenAny(port).ok())
          LogWarning("--tf-config: port " + std::to_string(port) + " of rank " +
                     std::to_string(rank) + " (" + ep + ") is in use on this host");
      }
    }
    plan.argv = BuildArgv(inv->command, o, plan.vars);
    plans.push_back(std::move(plan));
  }

  if (inv->subcommand == Subcommand::kEnv) {
    std::cout << FormatEnv(*world, plans, o) << std::flush;
    return 0;
  }
  if (o.preflight.tcp) {
    int code = RunPreflightStage(o, *world, plans, env, host);
    if (code != 0) return code;
  }
  std::vector<std::vector<int>> cpus(plans.size());
  if (o.numa_bind) cpus = NumaBinding(plans, gpus, true);
  LogVerbose("rank " + std::to_string(world->rank.value) + " of " +
             std::to_string(world->size.value) + " (" + world->source +
             "), master " + world->master_addr.value + ":" +
             std::to_string(world->master_port.value));
  if (supervise) {
    SupervisorConfig config;
    config.pipe_output = pipe_output;
    config.tag_output = tag;
    config.log_dir = o.log_dir;
    config.grace_s = o.grace_s;
    config.node_rank = world->node_rank.value;
    config.host = host;
    config.foreground_tty = pid1 && *nproc == 1 && !pipe_output;
    for (const ChildPlan& plan : plans) {
      ChildLaunch launch;
      launch.argv = plan.argv;
      launch.env = ApplyContract(env, plan.vars);
      launch.rank = std::stoi(ValueOf(plan.vars, "RANK"));
      launch.local_rank = std::stoi(ValueOf(plan.vars, "LOCAL_RANK"));
      launch.cpus = cpus[config.children.size()];
      config.children.push_back(std::move(launch));
    }
    return Supervise(config);
  }
  if (!cpus[0].empty()) {
    auto bound = BindToCpus(cpus[0]);
    if (!bound.ok()) LogWarning("--numa-bind: " + bound.error().message + "; running unbound");
  }
  std::string why;
  int code = ExecCommand(plans[0].argv, ApplyContract(env, plans[0].vars), &why);
  LogError(why);
  return code;
}

}  // namespace aml
