// Runs and supervises this shim's children (docs/supervision.md, "Per-node launch and
// supervision"): each in its own process group; SIGTERM/INT/HUP/QUIT/USR1/USR2
// forwarded to every group; fail-fast teardown (SIGTERM, SIGKILL after the
// grace period) on the first child that fails; orphaned grandchildren reaped
// (child subreaper, or PID 1); a keeper that kills the children's groups if
// the shim itself is killed; output tagged per rank and/or copied to per-rank
// log files, written without ever blocking; one failure summary. Blocks in
// ppoll on a signalfd, the output pipes and stdout/stderr: no busy loop, and
// every wait has a deadline. Only unreaped children are signalled, so a
// recycled pid is never hit.
#pragma once

#include <time.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/exec.h"
#include "launch/job_link.h"
#include "launch/metrics/metrics_door.h"
#include "launch/lifeline.h"
#include "shim/base/env_snapshot.h"

namespace aml {

struct ChildLaunch {
  std::vector<std::string> argv;
  // Its environment: `env_sets` over the shim's `base_env` (not owned; one
  // for every child, not a copy each).
  const EnvSnapshot* base_env = nullptr;
  EnvSets env_sets;
  int rank = 0;
  int local_rank = 0;
  std::vector<int> cpus;  // --numa-bind: CPUs to bind it to (empty: unbound)
  // --node-launcher: the node's launcher, not a rank: tagged "[node R]", a
  // restart gives it MASTER_PORT and PET_MASTER_PORT, and no torch worker's
  // variables (TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_ERROR_FILE).
  bool node_launcher = false;
};

struct SupervisorConfig {
  std::vector<ChildLaunch> children;
  // --metrics-addr: served from the loop (owned by the caller; null: off).
  MetricsDoor* metrics = nullptr;
  bool pipe_output = true;  // read the children's output (else inherit it)
  bool tag_output = true;   // prefix lines with "[rank R] "
  std::optional<std::string> log_dir;
  std::string run_id;        // the job's id, or this run's: failure.json's "run"
  timespec shim_started{};   // CLOCK_REALTIME when aml-shim started
  std::string tmp_dir;       // $TMPDIR ("" for /tmp): the error files without --log-dir
  // The shim's private directory (launch/error_file.h), named by the caller
  // when the ranks' variables name it too ("": named here, in tmp_dir).
  std::string private_dir;
  // --flight-recorder auto with --hang-timeout: the agent and each
  // attempt's directory are made, and a hang harvests the ranks' records,
  // --dump-timeout at most (docs/control-plane.md, "Naming the culprit").
  bool flight_recorder = false;
  double dump_timeout_s = 10;
  // With it: the records looked at every this long while the ranks write
  // nothing (--hang-timeout / 3; 0: never): a collective completed since
  // the last look is activity, as output is.
  double look_every_s = 0;
  double grace_s = 30;
  int node_rank = 0;
  std::string host;
  // --spares: this node starts no ranks in the first attempt (a spare:
  // `children` are placeholders of its count), and the children of the
  // NODE_RANK a restart order gives it (docs/control-plane.md, "Spares and
  // retirement").
  bool standby = false;
  std::function<std::vector<ChildLaunch>(int node_rank)> replan;
  // Give the terminal to the child's process group (single child, PID 1, a
  // tty on stdin), as tini does, so it can read the terminal and get ^C.
  bool foreground_tty = false;
  // --warm-restart: a standby interpreter per rank, which imports `preload`
  // (comma-separated modules), starts the next attempt's rank
  // (launch/warm_pool.h).
  bool warm_restart = false;
  std::string preload;
  // The job-wide control plane (not owned), or null: this node alone.
  JobLink* link = nullptr;
  // The launcher's lifeline (not owned), or null: no launcher started this
  // shim. When the launcher is gone, the job is stopped as by its SIGTERM
  // and aml-shim exits 143.
  const Lifeline* lifeline = nullptr;
};

// Returns the exit code for aml-shim: 0 when every child succeeded, else the
// first failure's status (128+N for signal N), 125/126/127 when a child
// could not be started.
int Supervise(const SupervisorConfig& config);

}  // namespace aml
