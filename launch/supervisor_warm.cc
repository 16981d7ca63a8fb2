// The supervisor (supervisor_table.h): --warm-restart's part
// (docs/control-plane.md, "Warm restarts"): the check before anything
// runs, a spare's standbys, a rank started from its standby at a restart,
// what failure.json says of it, and the standbys gone before the shim.
#include <poll.h>
#include <signal.h>

#include <algorithm>

#include "launch/supervisor_table.h"
#include "shim/base/json.h"

namespace aml {
namespace supervise {

// A standby that could not be made is refused before anything runs: no
// private directory for its program, no agent (`agent`: whether it was
// written) to learn the rank's modules, or an interpreter that does not
// find --preload's.
Status Supervisor::PrepareWarm(const Status& agent) {
  if (!agent.ok()) return Error{"--warm-restart: " + agent.error().message};
  if (!launches_.empty() && !launches_[0].node_launcher) {
    Status st = CheckWarmPreload(launches_[0].argv, *launches_[0].base_env, config_.preload);
    if (!st.ok()) return st;
  }
  // Standbys wait in the idle scheduling class, made as their ranks start,
  // where this shim may bring them back; else later, away from the ranks'
  // start-up (launch/warm_slots.h).
  const std::string late = WhyNotLeaveIdleClass();
  if (!late.empty())
    LogInfo("--warm-restart: standbys are made " +
            std::to_string(static_cast<int>(WarmSlots::kAfterS)) +
            " s after each attempt's ranks start, at the normal scheduling class: " + late);
  warm_.Configure(error_dir_, config_.preload, config_.pipe_output, late.empty());
  if (late.empty()) StartStoreHost();
  // A spare (--spares) keeps standbys too (the machine makes them): a
  // node's place it takes starts warm (with --preload's modules: no rank
  // of it ran yet).
  if (config_.standby)
    for (size_t i = 0; i < launches_.size(); ++i)
      warm_.Set(i, -1, launches_[i].argv, launches_[i].base_env, launches_[i].env_sets,
                launches_[i].cpus);
  return Ok();
}

// The node that runs rank 0 hosts each restart's store before the ranks
// start (launch/store_host.h), lent to the job's root. Not on a spare (its
// ranks are not the first attempt's), nor for a node's launcher.
void Supervisor::StartStoreHost() {
  if (config_.standby || !config_.link || launches_.empty() || launches_[0].node_launcher) return;
  for (const ChildLaunch& l : launches_) {
    if (l.rank != 0) continue;
    Result<PythonCommand> command = ParsePythonCommand(l.argv);
    if (!command.ok()) return;
    std::string addr = l.base_env->GetOr("MASTER_ADDR", ""), world;
    for (const auto& [name, value] : l.env_sets) {
      if (name == "MASTER_ADDR") addr = value;
      if (name == "WORLD_SIZE") world = value;
    }
    if (world.empty()) world = l.base_env->GetOr("WORLD_SIZE", "");
    if (addr.empty() || world.empty()) return;
    pid_t pid = -1;
    const std::string why = store_host_.Start(*command, *l.base_env, error_dir_, true, addr,
                                              std::atoi(world.c_str()), &pid);
    if (!why.empty()) {
      LogWarning("--warm-restart: " + why + ": rank 0 hosts each attempt's store");
      return;
    }
    to_watch_.push_back(pid);
    WatchStarted();
    config_.link->LendStoreHost(&store_host_);
    LogVerbose("--warm-restart: the store host (pid " + std::to_string(pid) +
               ") imports torch.distributed, in the idle scheduling class");
    return;
  }
}

// --warm-restart: child `i`'s standby made (the machine says when:
// launch/warm_slots.h), named to the keeper; "" or why not.
std::string Supervisor::MakeStandby(size_t i) {
  pid_t pid = -1;
  const std::string why = warm_.Make(i, &pid);
  if (!why.empty()) {
    LogWarning("--warm-restart: " + why + ": that rank restarts cold");
    return why;
  }
  to_watch_.push_back(pid);
  WatchStarted();
  return "";
}

// At a restart: child `i` from its standby, told `sets`; none when it
// refused its order (`w`'s why: it starts cold).
std::optional<SpawnedChild> Supervisor::TakeStandby(size_t i, const EnvSets& sets, WarmStart* w) {
  const ChildLaunch& l = *children_[i].launch;
  std::optional<SpawnedChild> warm = warm_.Take(i, l.argv, *l.base_env, sets, &w->cold);
  if (!warm) w->from_standby = false;
  return warm;
}

// At the end: every standby killed and gone before the shim exits, with
// whatever it started (its process group: a process that outlived its
// leader is this shim's, a subreaper's, and reaped here; each group found
// empty is forgotten by the keeper, as a rank's), so that no process the
// shim started outlives it. A SIGKILLed interpreter holding
// torch takes a moment to free its memory, longer on a busy machine (found
// in CI: a standby still there when the job's command had returned).
// Bounded: a process stuck in the kernel cannot be reaped.
void Supervisor::EndStandbys() {
  warm_.EndAll();
  store_host_.End();
  std::vector<pid_t> groups = warm_.pids();
  for (pid_t p : store_host_.pids()) groups.push_back(p);
  const double until = Now() + kStandbyEndS;
  for (;;) {
    Reap();
    keeper_.Forget(TakeEmptyGroups(&groups));
    if (groups.empty()) return;
    const double wait = until - Now();
    if (wait <= 0) {
      LogWarning("--warm-restart: standby (pid " + std::to_string(groups[0]) + ") or a process "
                 "it started still there " + std::to_string(static_cast<int>(kStandbyEndS)) +
                 " s after its SIGKILL (in the kernel: uninterruptible sleep); not waited for");
      return;
    }
    pollfd p{sfd_, POLLIN, 0};
    timespec ts = Timeout(std::min(wait, 0.05));
    if (ppoll(&p, 1, &ts, nullptr) > 0) ReadSignals();
  }
}

// --warm-restart: how this node's ranks of the last restart started ("": no
// restart here yet, or the option is off).
std::string Supervisor::WarmRestartJson() const {
  const std::vector<size_t>& warm = machine_.warm_started();
  const auto& cold = machine_.cold_started();
  if (!warm_.on() || (warm.empty() && cold.empty())) return "";
  auto rank = [this](size_t i) { return std::to_string(launches_[i].rank); };
  std::string out = "{\"host\":" + JsonQuote(config_.host) +
                    ",\"attempt\":" + std::to_string(machine_.restarts() + 1) + ",\"warm\":[";
  for (size_t k = 0; k < warm.size(); ++k) out += (k ? "," : "") + rank(warm[k]);
  out += "],\"cold\":[";
  for (size_t k = 0; k < cold.size(); ++k)
    out += std::string(k ? "," : "") + "{\"rank\":" + rank(cold[k].first) +
           ",\"why\":" + JsonQuote(cold[k].second) + "}";
  return out + "]}";
}

}  // namespace supervise
}  // namespace aml
