// The supervisor (supervisor_table.h): --warm-restart's part
// (docs/control-plane.md, "Warm restarts"): the check before anything
// runs, a spare's standbys, a rank started from its standby at a restart,
// and what failure.json says of it.
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
  warm_.Configure(error_dir_, config_.preload, config_.pipe_output);
  // A spare (--spares) keeps standbys too: a node's place it takes starts
  // warm (with --preload's modules: no rank of it ran yet).
  if (config_.standby)
    for (size_t i = 0; i < launches_.size(); ++i)
      warm_.Due(i, -1, launches_[i].argv, launches_[i].base_env, launches_[i].env_sets,
                launches_[i].cpus, Now());
  return Ok();
}

// At a restart: child `i` from its standby, told `sets`; none when it has
// none (said, with why: it starts cold).
std::optional<SpawnedChild> Supervisor::TakeStandby(size_t i, const EnvSets& sets) {
  const ChildLaunch& l = *children_[i].launch;
  if (i == 0) {
    warm_ranks_.clear();
    cold_ranks_.clear();
  }
  std::string cold;
  std::optional<SpawnedChild> warm = warm_.Take(i, l.argv, *l.base_env, sets, &cold);
  if (warm) {
    warm_ranks_.push_back(l.rank);
  } else {
    cold_ranks_.emplace_back(l.rank, cold);
    LogWarning("--warm-restart: rank " + std::to_string(l.rank) + " starts cold: " + cold);
  }
  return warm;
}

// --warm-restart: how this node's ranks of the last restart started ("": no
// restart here yet, or the option is off).
std::string Supervisor::WarmRestartJson() const {
  if (!warm_.on() || (warm_ranks_.empty() && cold_ranks_.empty())) return "";
  std::string out = "{\"host\":" + JsonQuote(config_.host) +
                    ",\"attempt\":" + std::to_string(machine_.restarts() + 1) + ",\"warm\":[";
  for (size_t k = 0; k < warm_ranks_.size(); ++k)
    out += (k ? "," : "") + std::to_string(warm_ranks_[k]);
  out += "],\"cold\":[";
  for (size_t k = 0; k < cold_ranks_.size(); ++k)
    out += std::string(k ? "," : "") + "{\"rank\":" + std::to_string(cold_ranks_[k].first) +
           ",\"why\":" + JsonQuote(cold_ranks_[k].second) + "}";
  return out + "]}";
}

}  // namespace supervise
}  // namespace aml
