// The command line (docs/cli.md, "Command line"). Every option also reads
// AML_SHIM_<NAME> (dashes as underscores, upper case); the command line wins.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/log.h"
#include "shim/base/result.h"
#include "shim/world/master.h"

namespace aml {

enum class Subcommand { kRun, kEnv, kProbe };
enum class NprocKind { kCount, kGpu, kAuto };
enum class IbMode { kAuto, kRequire, kOff };

struct Preflight {
  bool tcp = false;
  bool nccl = false;
};

struct Options {
  NprocKind nproc_kind = NprocKind::kCount;
  int nproc = 1;  // when nproc_kind == kCount
  // Where gpu/auto came from, for errors: "--nproc-per-node" or
  // "AML_SHIM_NPROC_PER_NODE".
  std::string nproc_origin = "--nproc-per-node";
  bool nproc_given = false;  // by the option or its variable (else a launcher's may)
  // --node-launcher: the command is each node's own launcher (torchrun,
  // Lightning, accelerate launch): it gets the node's contract only.
  bool node_launcher = false;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;
  RendezvousMode rendezvous = RendezvousMode::kAuto;
  bool local_rank_arg = false;
  bool numa_bind = false;
  bool tf_config = false;
  int ps_count = 0;
  std::optional<std::string> log_dir;
  std::optional<bool> tag_output;  // unset: on when supervising > 1 child
  double grace_s = 30;
  // --fail-fast job: a failure on any node ends every node (the control
  // plane, shim/control/plane.h); --hang-timeout implies it.
  bool fail_fast_job = false;
  std::optional<double> hang_timeout_s;
  // --max-restarts: job-wide restarts (implies fail_fast_job when > 0).
  int max_restarts = 0;
  // --spares K: the last K shims (one per node) start no ranks and take the
  // place of a node that is retired (docs/control-plane.md, "Spares and
  // retirement"); --retire-after N: a node whose ranks fail first in N
  // attempts in a row is retired.
  int spares = 0;
  int retire_after = 2;
  // --flight-recorder auto|off: with --hang-timeout, PyTorch's flight
  // recorder in every rank and a hang's culprit named from it; --dump-timeout:
  // how long a hang waits for the ranks' records (docs/control-plane.md,
  // "Naming the culprit").
  bool flight_recorder = true;
  double dump_timeout_s = 10;
  // --straggler-check INTERVAL: every INTERVAL the ranks' flight records
  // say which node the job waits for (docs/control-plane.md, "Slow nodes");
  // --retire-slow: with --spares, such a node is retired.
  std::optional<double> straggler_check_s;
  bool retire_slow = false;
  // --warm-restart: a standby interpreter per rank, which imported
  // --preload's modules (comma-separated), starts the next attempt's rank.
  bool warm_restart = false;
  std::string preload = "torch";
  // --metrics-addr HOST:PORT: this shim's metrics in Prometheus' text format
  // over HTTP (docs/metrics.md); checked as the run is planned.
  std::optional<std::string> metrics_addr;
  // --dcgm-job-dir DIR: the files dcgm-exporter's --hpc-job-mapping-dir
  // reads (docs/metrics.md).
  std::optional<std::string> dcgm_job_dir;
  IbMode ib = IbMode::kAuto;
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  Preflight preflight;
  double preflight_timeout_s = 60;
  uint64_t preflight_bytes = uint64_t{256} << 20;
  std::optional<double> min_busbw;  // GB/s
  Verbosity verbosity = Verbosity::kNormal;
  // `env` subcommand output
  bool json = false;
  bool explain = false;
};

// PyTorch's flight recorder is kept in every rank: a hang's culprit, or the
// straggler check, reads it.
inline bool WantsFlightRecorder(const Options& o) {
  return o.flight_recorder && (o.hang_timeout_s || o.straggler_check_s) && !o.node_launcher;
}

// The control plane runs (supervision, no exec in place).
inline bool WantsControlPlane(const Options& o) {
  return o.fail_fast_job || o.hang_timeout_s || o.max_restarts > 0 || o.straggler_check_s;
}

struct Invocation {
  Subcommand subcommand = Subcommand::kRun;
  Options options;
  std::vector<std::string> command;  // COMMAND [ARGS...]
  bool help = false;
  bool version = false;
};

// Parses argv (argv[0] excluded) with the AML_SHIM_* variables of `env`.
// Errors name the option or variable and its value.
Result<Invocation> ParseCommandLine(const std::vector<std::string>& args,
                                    const EnvSnapshot& env);

// Options of the table that no subcommand rule covers (must be none).
std::vector<std::string> OptionsWithoutScope();

// N, 'gpu' or 'auto' (--nproc-per-node's values) from `origin` into `o`.
Status ParseNproc(const std::string& origin, const std::string& value, Options* o);

// The --help text.
std::string HelpText();

}  // namespace aml
