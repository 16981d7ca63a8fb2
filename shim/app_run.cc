// aml-shim's last stage (app_stages.h): exec in place, or supervise the
// children with the control plane, the node's checks and the metrics.
#include <time.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "ib/probe.h"
#include "launch/cpu_affinity.h"
#include "launch/exec.h"
#include "launch/lifeline.h"
#include "launch/supervisor.h"
#include "shim/app_stages.h"
#include "shim/base/env_var.h"
#include "shim/base/host_port.h"
#include "shim/base/log.h"
#include "shim/control/plane.h"
#include "shim/control/plane_timing.h"
#include "shim/plan/node_check.h"
#include "shim/preflight/node_nccl_check.h"
#include "shim/topology/dcgm_mapping.h"
#include "shim/topology/gpu_count.h"
#include "shim/topology/gpu_topology.h"
#include "shim/world/sources.h"
#include "shim/world/spare_world.h"

namespace aml {
namespace app {
namespace {

// failure.json's "run": the launcher's job id, which every shim of the job
// shares; else this shim's own (host, pid, start time).
std::string RunId(const EnvSnapshot& env, const std::string& host, const timespec& started) {
  if (auto job = ReadJobId(env)) return job->value;
  return host + ":" + std::to_string(getpid()) + ":" + std::to_string(started.tv_sec) + "." +
         std::to_string(started.tv_nsec);
}

// A node's NCCL check before another attempt (--spares): its bound, within
// the root's wait for a restart round (--grace + 30 s).
constexpr double kNodeNcclCheckS = 20;

// The job-wide control plane (--fail-fast job, --hang-timeout): every shim
// joins before any child starts. Null when off; exit code when it failed.
Result<std::unique_ptr<ControlPlane>> JoinControlPlane(const Options& o, const World& world,
                                                       const Planned& p, const EnvSnapshot& env,
                                                       const std::string& host,
                                                       const Membership& member,
                                                       const std::string& run_id) {
  if (!WantsControlPlane(o)) return std::unique_ptr<ControlPlane>();
  PlaneConfig c;
  c.rank = world.rank.value;
  c.size = world.size.value;
  c.node = world.node_rank.value;
  c.host = host;
  for (const ChildPlan& child : p.children) c.ranks.push_back(child.rank);
  c.world_ranks = p.children[0].world_size;
  c.ranks_per_node = static_cast<int>(p.children.size());
  if (o.spares > 0) {
    // p is the plan of the NODE_RANK this shim holds (a spare's: none yet).
    c.spares = o.spares;
    c.retire_after = o.retire_after;
    c.node = IsSpare(world, o.spares) ? -1 : world.rank.value;
    if (c.node < 0) c.ranks.clear();
    // Before each restart, this node must still have what it had now (a
    // GPU fallen off the bus, a port gone down: it is retired).
    const NodeBaseline baseline =
        TakeBaseline(DriverGpus(o.proc_root), o.ib != IbMode::kOff ? ProbeSysfs(o.sysfs_root)
                                                                   : FabricReport{});
    const bool ports = o.ib != IbMode::kOff;
    // With --preflight nccl --min-busbw, its GPUs' all-reduce too, on a
    // thread of its own (shim/preflight/node_nccl_check.h).
    std::shared_ptr<NodeNcclCheck> nccl;
    if (o.preflight.nccl && o.min_busbw)
      nccl = std::make_shared<NodeNcclCheck>(
          world.rank.value, host, NcclSetup(o, world, p.children, env),
          ApplyContract(env, p.children[0].vars), *o.min_busbw,
          std::min(o.preflight_timeout_s, kNodeNcclCheckS));
    c.node_check = [baseline, ports, nccl, proc = o.proc_root,
                    sysfs = o.sysfs_root]() -> std::optional<std::string> {
      std::string lost =
          CheckNode(baseline, DriverGpus(proc), ports ? ProbeSysfs(sysfs) : FabricReport{});
      if (!nccl) return lost;
      std::optional<std::string> bandwidth = nccl->Poll();
      if (!bandwidth) return std::nullopt;
      if (!bandwidth->empty()) lost += (lost.empty() ? "" : "; ") + *bandwidth;
      return lost;
    };
  }
  c.master_addr = world.master_addr.value;
  c.master_port = world.master_port.value;
  c.hang_timeout_s = o.hang_timeout_s;
  c.flight_recorder = WantsFlightRecorder(o);
  c.pace_every_s = o.straggler_check_s.value_or(0);
  c.retire_slow = o.retire_slow;
  c.dump_timeout_s = o.dump_timeout_s;
  c.max_restarts = o.max_restarts;
  c.join_timeout_s = o.preflight_timeout_s;
  c.grace_s = o.grace_s;
  c.run_id = run_id;
  if (o.log_dir) c.log_dir = *o.log_dir;
  if (c.size > 1) {
    c.prover = member.prover();
    LogVerbose(member.token.empty() ? "control plane: " + member.why
                               : "control plane: links carry a digest of " + member.why);
  }
  auto plane = ControlPlane::Join(c);
  if (!plane.ok()) return plane.error();
  if (c.size > 1)
    LogVerbose("control plane: joined (" + std::to_string(c.size) + " shims; " +
               std::to_string((*plane)->links()) + " link(s) here; tree depth " +
               std::to_string((*plane)->depth()) + ")");
  return plane;
}

// Each child's launch from its plan.
std::vector<ChildLaunch> Launches(const Options& o, const Planned& p, const EnvSnapshot& env) {
  std::vector<ChildLaunch> out;
  for (const ChildPlan& plan : p.children) {
    ChildLaunch launch;
    launch.argv = plan.argv;
    launch.base_env = &env;
    launch.env_sets = ContractSets(plan.vars);
    launch.rank = plan.rank;
    launch.local_rank = plan.local_rank;
    launch.cpus = plan.cpus;
    launch.node_launcher = o.node_launcher;
    out.push_back(std::move(launch));
  }
  return out;
}

}  // namespace

// The NCCL worker's job: one slot per child, each on the GPU of its
// LOCAL_RANK, with its ranks in the node's and the world's communicators.
WorkerSetup NcclSetup(const Options& o, const World& world, const std::vector<ChildPlan>& plans,
                      const EnvSnapshot& env) {
  WorkerSetup setup;
  setup.bytes = o.preflight_bytes;
  setup.make_node_id = world.local_rank.value == 0;
  setup.make_world_id = world.rank.value == 0 && !world.single_node;
  if (o.node_launcher) {
    // The launcher's processes are not known here: one slot per visible
    // GPU, as many on every node.
    const int g = std::max(1, CountVisibleGpus(env, o.proc_root).count);
    for (int i = 0; i < g; ++i) {
      WorkerSlot s;
      s.device = s.node_rank = i;
      s.node_size = g;
      s.world_rank = world.node_rank.value * g + i;
      s.world_size = world.node_count.value * g;
      setup.slots.push_back(s);
    }
    return setup;
  }
  for (const ChildPlan& p : plans) {
    WorkerSlot s;
    s.device = s.node_rank = p.local_rank;
    s.node_size = p.local_size;
    s.world_rank = p.rank;
    s.world_size = p.world_size;
    setup.slots.push_back(s);
  }
  return setup;
}

int Run(const Options& o, const World& world, const Planned& p, const EnvSnapshot& env,
        const std::string& host, const Membership& member, const NodePlanner& plan_node,
        const timespec& started) {
  LogVerbose("rank " + std::to_string(world.rank.value) + " of " +
             std::to_string(world.size.value) + " (" + LauncherName(world.source) +
             "), master " + world.master_addr.value + ":" +
             std::to_string(world.master_port.value));
  if (p.supervise) {
    // Watched from before the control plane's join: a launcher that dies
    // meanwhile is seen once the ranks run.
    static Lifeline lifeline;
    if (HasLauncher(world.source)) lifeline.WatchParent();
    SupervisorConfig config;
    config.lifeline = lifeline.watching() ? &lifeline : nullptr;
    config.pipe_output = p.pipe_output;
    config.tag_output = p.tag;
    config.log_dir = o.log_dir;
    config.run_id = RunId(env, host, started);
    // (Before the join: a port that cannot be had fails this shim alone,
    // before any rank starts.)
    std::unique_ptr<MetricsDoor> metrics;
    if (p.metrics) {
      auto door = MetricsDoor::Open(*p.metrics);
      if (!door.ok()) {
        LogError(door.error().message);
        return kExitShimFailure;
      }
      metrics = std::move(*door);
      LogVerbose("--metrics-addr: serving http://" +
                 JoinHostPort(p.metrics->host.empty() ? "0.0.0.0" : p.metrics->host,
                              metrics->port()) + "/metrics");
    }
    config.metrics = metrics.get();
    // --dcgm-job-dir: the GPUs of this node's ranks (local rank i takes the
    // i-th visible GPU), labelled with the job's id until the shim ends.
    DcgmMapping dcgm;
    if (o.dcgm_job_dir && !IsSpare(world, o.spares)) {
      const GpuTopology topo = ReadGpuTopology(env, o.proc_root, o.sysfs_root);
      std::vector<int> used;
      for (size_t i = 0; i < p.children.size() && i < topo.gpus.size(); ++i)
        used.push_back(topo.gpus[i].index);
      if (used.empty())
        LogWarning("--dcgm-job-dir: no GPU of this node's ranks is known (" + topo.why +
                   "): nothing written");
      auto written = DcgmMapping::Write(*o.dcgm_job_dir, used, config.run_id);
      if (!written.ok()) {
        LogError(written.error().message);
        return kExitShimFailure;
      }
      dcgm = std::move(*written);
    }
    auto plane = JoinControlPlane(o, world, p, env, host, member, config.run_id);
    if (!plane.ok()) {
      LogError(plane.error().message);
      return kExitShimFailure;
    }
    config.link = plane->get();
    config.shim_started = started;
    config.tmp_dir = env.GetOr("TMPDIR", "");
    config.private_dir = p.private_dir;
    config.flight_recorder = !p.flight_dir.empty();
    config.dump_timeout_s = o.dump_timeout_s;
    config.look_every_s = TimingOf(o.hang_timeout_s, config.flight_recorder).look_every_s;
    config.grace_s = o.grace_s;
    config.warm_restart = o.warm_restart;
    config.preload = o.preload;
    config.node_rank = world.node_rank.value;
    config.host = host;
    config.foreground_tty = p.pid1 && p.children.size() == 1 && !p.pipe_output;
    config.children = Launches(o, p, env);
    if (o.spares > 0) {
      config.node_rank = world.rank.value;
      config.standby = IsSpare(world, o.spares);
      if (config.standby)
        LogInfo("spare (--spares " + std::to_string(o.spares) + "): " + host +
                " starts no ranks until a retired node's NODE_RANK is given to it");
      config.replan = [&o, &env, &plan_node](int node) {
        auto planned = plan_node(node);
        if (!planned.ok()) {
          LogError("NODE_RANK " + std::to_string(node) + ": " + planned.error().message);
          return std::vector<ChildLaunch>();
        }
        return Launches(o, *planned, env);
      };
    }
    return Supervise(config);
  }
  const ChildPlan& only = p.children[0];
  if (!only.cpus.empty()) {
    auto bound = BindToCpus(only.cpus);
    if (!bound.ok()) LogWarning("--numa-bind: " + bound.error().message + "; running unbound");
  }
  std::string why;
  int code = ExecCommand(only.argv, env, ContractSets(only.vars), &why);
  LogError(why);
  return code;
}

}  // namespace app
}  // namespace aml
