// The options aml-shim takes (option_table.h): their descriptions, their
// AML_SHIM_* twins, the subcommands each applies to, and --help's text.
#include "shim/cli/option_table.h"

#include <cctype>
#include <sstream>

#include "shim/cli/options.h"

namespace aml {
namespace cli {

po::options_description Describe() {
  po::options_description d("Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("version", "print the version and exit")
    ("nproc-per-node", po::value<std::string>()->value_name("N|gpu|auto"),
     "children per shim: a number, 'gpu' (visible NVIDIA GPUs) or 'auto' "
     "(GPUs, else 1). 1 (default) execs the command in place")
    ("master-addr", po::value<std::string>()->value_name("ADDR"),
     "rank 0's address (overrides discovery)")
    ("master-port", po::value<std::string>()->value_name("PORT"),
     "rank 0's port (overrides discovery)")
    ("rendezvous", po::value<std::string>()->value_name("auto|env|mpi"),
     "how to find the master and the exact NODE_RANK: env never calls MPI "
     "(and stops when the variables cannot prove NODE_RANK); mpi always does "
     "(MPI_Init/MPI_Finalize before the command); auto uses MPI only for "
     "multi-node jobs whose master or NODE_RANK nothing else gives")
    ("node-launcher", "the command is each node's own launcher (torchrun, Lightning, "
     "accelerate launch): it gets the node's variables only (MASTER_ADDR, MASTER_PORT, "
     "NODE_RANK, NNODES and torchrun's PET_* defaults), nothing of a rank; one shim per node")
    ("local-rank-arg", "append --local_rank=N to the command "
     "(legacy torch.distributed.launch scripts)")
    ("tf-config", "also write TensorFlow's TF_CONFIG (every rank's host:port; "
     "multi-node jobs take them from MPI rendezvous)")
    ("ps-count", po::value<std::string>()->value_name("K"),
     "with --tf-config: the first K ranks are parameter servers")
    ("log-dir", po::value<std::string>()->value_name("DIR"),
     "per-rank files DIR/rank-<R>.stdout and .stderr, and DIR/failure.json")
    ("tag-output", "prefix each output line with '[rank <R>] ' "
     "(default: on when supervising more than one child)")
    ("no-tag-output", "never prefix output lines")
    ("grace", po::value<std::string>()->value_name("SECONDS"),
     "seconds between SIGTERM and SIGKILL at teardown (default 30; also 30s, 1m)")
    ("fail-fast", po::value<std::string>()->value_name("node|job"),
     "what a failing rank ends: node (default) = this shim's children; job = "
     "every node of the job within a second, whatever the launcher does "
     "(a control plane between the shims, rank 0's shim prints the job's "
     "first failure once)")
    ("hang-timeout", po::value<std::string>()->value_name("DURATION"),
     "judge the job hung when no rank on any node wrote output for DURATION "
     "(600, 15s, 10m); then every rank's Python stack is read, rank 0's shim "
     "prints one roll-call, the job ends and every shim exits 124. Implies "
     "--fail-fast job")
    ("max-restarts", po::value<std::string>()->value_name("N"),
     "when a rank fails or the job hangs, end every rank of the job and start "
     "them all again, at most N times (TORCHELASTIC_RESTART_COUNT counts "
     "them; a new MASTER_PORT each time); not for a failure at start of "
     "every rank, 125, 126 or 127 (default 0). Implies --fail-fast job")
    ("spares", po::value<std::string>()->value_name("K"),
     "keep the last K shims (one per node) as spares: they start no ranks, "
     "and at a restart one takes the NODE_RANK of a node that was retired "
     "(lost, or its ranks failed first in --retire-after attempts in a row); "
     "WORLD_SIZE counts the other nodes. Needs --max-restarts")
    ("retire-after", po::value<std::string>()->value_name("N"),
     "with --spares: retire a node whose ranks were the job's first failure "
     "in N attempts in a row (default 2)")
    ("flight-recorder", po::value<std::string>()->value_name("auto|off"),
     "with --hang-timeout: keep PyTorch's flight recorder in every rank (its "
     "variables, and aml-shim's sitecustomize where torch has no reader) and "
     "name a hang's culprit from it: the collective, the ranks that never "
     "entered it, their node and host; a silent job whose collectives advance "
     "is not judged hung (default auto; off sets nothing)")
    ("dump-timeout", po::value<std::string>()->value_name("DURATION"),
     "how long a hang waits for the ranks' flight records (default 10s)")
    ("straggler-check", po::value<std::string>()->value_name("INTERVAL"),
     "every INTERVAL (60s, 5m) read every rank's flight record and name the "
     "node whose ranks enter the collectives last (3 looks in a row), with how "
     "long the job waits for it per minute (off by default; keeps PyTorch's "
     "flight recorder; implies --fail-fast job)")
    ("retire-slow",
     "with --spares and --straggler-check: retire a node named slow; the "
     "attempt ends and a spare takes its place")
    ("warm-restart",
     "with --max-restarts: keep one standby Python interpreter per rank that "
     "has imported --preload's modules, and start the next attempt's ranks "
     "from them (a script or -m module; another command restarts cold, said "
     "once)")
    ("preload", po::value<std::string>()->value_name("MODULES"),
     "with --warm-restart: the modules each standby imports, comma-separated "
     "(default torch)")
    ("metrics-addr", po::value<std::string>()->value_name("HOST:PORT"),
     "serve this shim's metrics (its ranks, and on rank 0's shim the job's "
     "state) in Prometheus' text format over HTTP at http://HOST:PORT/metrics "
     "(:PORT for every address; off by default)")
    ("dcgm-job-dir", po::value<std::string>()->value_name("DIR"),
     "write the job's id into DIR/<GPU index> for each GPU of this node's "
     "ranks (dcgm-exporter's --hpc-job-mapping-dir), removed at the end")
    ("ib", po::value<std::string>()->value_name("auto|require|off"),
     "fabric probe and NCCL/UCX env; require fails without an active "
     "InfiniBand/RoCE port (default auto)")
    ("sysfs-root", po::value<std::string>()->value_name("DIR"),
     "read DIR/class/infiniband and DIR/bus/pci instead of /sys/... "
     "(containers, tests)")
    ("proc-root", po::value<std::string>()->value_name("DIR"),
     "read DIR/driver/nvidia/gpus instead of /proc/driver/nvidia/gpus")
    ("preflight", po::value<std::string>()->value_name("none|tcp|nccl|all"),
     "checks before the command starts (default none): tcp = every rank "
     "connects to MASTER_ADDR:MASTER_PORT; nccl (or all) = that, then an NCCL "
     "all-reduce on each node's GPUs and across nodes, checked and timed. A "
     "failure exits 125 on every rank")
    ("preflight-timeout", po::value<std::string>()->value_name("SECONDS"),
     "bound on each preflight stage: connecting, the GPUs' start, the "
     "all-reduces (default 60; also 60s, 2m; at least 0.1)")
    ("preflight-bytes", po::value<std::string>()->value_name("SIZE"),
     "--preflight nccl: all-reduce size per GPU, bytes or with K/M/G "
     "(default 256M)")
    ("min-busbw", po::value<std::string>()->value_name("GB/s"),
     "--preflight nccl: fail when a node's all-reduce bus bandwidth is under "
     "this (e.g. 228 for ND96asr_v4, 460 for ND96isr_H100_v5 at 8 GB)")
    ("numa-bind", "pin each child to the CPUs of its GPU's NUMA node (the GPU of "
     "its local rank; from the NVIDIA driver's /proc and sysfs)")
    ("quiet,q", "only errors from aml-shim itself")
    ("verbose,v", "explain what aml-shim does")
    ("json", "env/probe: print JSON")
    ("explain", "env: show where each value came from");
  // clang-format on
  return d;
}

bool IsFlag(const po::options_description& d, const std::string& name) {
  const po::option_description* o = d.find_nothrow(name, false);
  return o && o->semantic()->max_tokens() == 0;
}

std::string EnvName(const std::string& option) {
  std::string out = "AML_SHIM_";
  for (char c : option)
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const std::vector<OptionRule>& OptionRules() {
  static const std::vector<OptionRule> rules = {
    {"help", false, kAll},           {"version", false, kAll},
    {"nproc-per-node", true, kRun | kEnv},
    {"master-addr", true, kRun | kEnv},
    {"master-port", true, kRun | kEnv},
    {"rendezvous", true, kRun | kEnv},
    {"local-rank-arg", true, kRun | kEnv},
    {"node-launcher", true, kRun | kEnv},
    {"tf-config", true, kRun | kEnv},
    {"ps-count", true, kRun | kEnv},
    {"log-dir", true, kRun},         {"tag-output", true, kRun},
    {"no-tag-output", true, kRun},   {"grace", true, kRun},
    {"fail-fast", true, kRun},       {"hang-timeout", true, kRun | kEnv},
    {"flight-recorder", true, kRun | kEnv}, {"dump-timeout", true, kRun},
    {"straggler-check", true, kRun | kEnv}, {"retire-slow", false, kRun},
    {"warm-restart", true, kRun | kEnv}, {"preload", true, kRun | kEnv},
    {"metrics-addr", true, kRun}, {"dcgm-job-dir", true, kRun},
    {"max-restarts", true, kRun | kEnv},
    {"spares", true, kRun | kEnv},    {"retire-after", true, kRun | kEnv},
    {"ib", true, kRun | kEnv},       {"sysfs-root", true, kAll},
    {"proc-root", true, kRun | kEnv},
    {"preflight", true, kRun},       {"preflight-timeout", true, kRun},
    {"preflight-bytes", true, kRun}, {"min-busbw", true, kRun},
    {"numa-bind", true, kRun},       {"quiet", true, kAll},
    {"verbose", true, kAll},         {"json", false, kEnv | kProbe},
    {"explain", false, kEnv},
  };
  return rules;
}

const OptionRule* FindRule(const std::string& name) {
  for (const OptionRule& r : OptionRules())
    if (name == r.name) return &r;
  return nullptr;
}

unsigned ScopeOf(Subcommand s) {
  switch (s) {
    case Subcommand::kRun: return kRun;
    case Subcommand::kEnv: return kEnv;
    case Subcommand::kProbe: return kProbe;
  }
  return 0;
}

const char* Where(Subcommand s) {
  switch (s) {
    case Subcommand::kRun: return "running a command";
    case Subcommand::kEnv: return "'aml-shim env'";
    case Subcommand::kProbe: return "'aml-shim probe'";
  }
  return "";
}

}  // namespace cli

std::vector<std::string> OptionsWithoutScope() {
  std::vector<std::string> out;
  const cli::po::options_description desc = cli::Describe();
  for (const auto& d : desc.options())
    if (!cli::FindRule(d->long_name())) out.push_back(d->long_name());
  return out;
}

std::string HelpText() {
  std::ostringstream out;
  out << "Usage:\n"
         "  aml-shim [OPTIONS] [--] COMMAND [ARGS...]   resolve the job's world, "
         "then exec or supervise COMMAND\n"
         "  aml-shim env   [OPTIONS] [--json|--explain] print what COMMAND would "
         "get, for this rank\n"
         "  aml-shim probe [--json] [--sysfs-root DIR]  print this node's fabric "
         "report\n\n"
      << cli::Describe()
      << "\nEvery option can also be set as AML_SHIM_<NAME> "
         "(e.g. AML_SHIM_NPROC_PER_NODE=8); the command line wins.\n"
         "Exit status: the command's; 128+N if it died of signal N; 125 when "
         "aml-shim fails;\n126 command not executable; 127 command not found; 124 the "
         "job was judged hung\n(--hang-timeout). With --max-restarts, the last "
         "attempt's.\n";
  return out.str();
}

}  // namespace aml
