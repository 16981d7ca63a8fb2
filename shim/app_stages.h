// aml-shim's stages (app.cc: Resolve -> Rendezvous -> Plan -> Check -> Run)
// share these; the last, Run, is in app_run.cc.
#pragma once

#include <time.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/metrics/metrics_door.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/cli/options.h"
#include "shim/plan/child_plan.h"
#include "shim/preflight/membership.h"
#include "shim/preflight/nccl_stage.h"
#include "shim/world/world.h"

namespace aml {
namespace app {

// Plan's outcome: what each child gets, and how this shim runs them.
struct Planned {
  std::vector<ChildPlan> children;
  // The shim's private directory (launch/error_file.h) when the ranks'
  // flight-recorder variables name it ("": --flight-recorder off).
  std::string flight_dir;
  std::string private_dir;  // named before the ranks' variables name it ("": the shim's own)
  std::optional<MetricsAddr> metrics;  // --metrics-addr
  bool pid1 = false;  // aml-shim is PID 1 (a container's entrypoint)
  bool supervise = false, tag = false, pipe_output = false;
};

// --spares: the plan of the shim that holds NODE_RANK `node`.
using NodePlanner = std::function<Result<Planned>(int node)>;

// The NCCL worker's job: one slot per child, each on the GPU of its
// LOCAL_RANK, with its ranks in the node's and the world's communicators.
WorkerSetup NcclSetup(const Options& o, const World& world, const std::vector<ChildPlan>& plans,
                      const EnvSnapshot& env);

// Exec in place, or supervise the children; the exit code. `p`: with
// --spares, the plan of the NODE_RANK this shim holds (a spare's,
// placeholders of the same count); `plan_node` plans another. `started`:
// CLOCK_REALTIME when Main began (the run's id without a launcher's job).
int Run(const Options& o, const World& world, const Planned& p, const EnvSnapshot& env,
        const std::string& host, const Membership& member, const NodePlanner& plan_node,
        const timespec& started);

}  // namespace app
}  // namespace aml
