#include "shim/cli/options.h"

#include <boost/program_options.hpp>
#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "shim/base/host_port.h"
#include "shim/base/parse_int.h"
#include "shim/base/text_list.h"
#include "shim/base/units.h"
#include "shim/cli/nearest_word.h"
#include "shim/cli/option_table.h"

namespace po = boost::program_options;

namespace aml {
namespace {

using cli::Describe;
using cli::EnvName;
using cli::FindRule;
using cli::IsFlag;
using cli::OptionRule;
using cli::OptionRules;
using cli::ScopeOf;
using cli::Where;
using cli::kRun;

// The option's origin for error messages: "--grace" or "AML_SHIM_GRACE".
struct Origins {
  std::vector<std::string> from_env;
  bool FromEnv(const std::string& option) const {
    return std::find(from_env.begin(), from_env.end(), option) != from_env.end();
  }
  std::string Name(const std::string& option) const {
    return FromEnv(option) ? EnvName(option) : "--" + option;
  }
};

// Options given on the command line that do not apply to the subcommand are
// refused, never ignored. AML_SHIM_* twins are job-wide settings: one that
// does not apply (AML_SHIM_LOG_DIR under `env`) is left alone.
Status RefuseInapplicable(const po::variables_map& vm, const Origins& origin, Subcommand sub) {
  for (const OptionRule& r : OptionRules()) {
    if (!vm.count(r.name) || vm[r.name].defaulted() || (r.scope & ScopeOf(sub)) ||
        origin.FromEnv(r.name))
      continue;
    std::string hint;
    if (sub == Subcommand::kRun) hint = " (use 'aml-shim env')";
    else if (r.scope == kRun) hint = " (it only applies when running a command)";
    return Error{std::string("--") + r.name + " does not apply to " + Where(sub) + hint};
  }
  return Ok{};
}

Result<bool> ParseBoolVar(const std::string& name, const std::string& value) {
  std::string v;
  for (char c : value) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) return false;
  return Error{name + "='" + value + "' is not a boolean (use 1/0, true/false)"};
}

template <class E>
Result<E> ParseEnum(const std::string& what, const std::string& value,
                    std::initializer_list<std::pair<const char*, E>> table) {
  std::string expected;
  for (const auto& [name, e] : table) {
    if (value == name) return e;
    expected += expected.empty() ? name : std::string("|") + name;
  }
  return Error{what + "='" + value + "' is not one of " + expected};
}

}  // namespace

Status ParseNproc(const std::string& origin, const std::string& v, Options* o) {
  o->nproc_origin = origin;
  if (v == "gpu") {
    o->nproc_kind = NprocKind::kGpu;
  } else if (v == "auto") {
    o->nproc_kind = NprocKind::kAuto;
  } else {
    auto n = ParseInt(origin, v, 1, 4096);
    if (!n.ok()) return Error{n.error().message + "; expected a count, 'gpu' or 'auto'"};
    o->nproc_kind = NprocKind::kCount;
    o->nproc = static_cast<int>(*n);
  }
  return Ok();
}

namespace {

Status Validate(const po::variables_map& vm, const Origins& origin,
                Options& o) {
  auto str = [&](const char* name) { return vm[name].as<std::string>(); };
  if (vm.count("nproc-per-node")) {
    if (Status st = ParseNproc(origin.Name("nproc-per-node"), str("nproc-per-node"), &o); !st.ok())
      return st;
    o.nproc_given = true;
  }
  o.node_launcher = vm.count("node-launcher") > 0;
  if (o.node_launcher) {
    auto no = [&](const char* option, const std::string& why) {
      return Error{"--node-launcher and " + origin.Name(option) + " do not go together: " + why};
    };
    if (o.nproc_given && !(o.nproc_kind == NprocKind::kCount && o.nproc == 1))
      return no("nproc-per-node", "the launcher starts the node's processes (give it the count: "
                                  "torchrun --nproc-per-node N)");
    if (vm.count("local-rank-arg")) return no("local-rank-arg", "the launcher's processes get "
                                                                "their local rank from it");
    if (vm.count("tf-config")) return no("tf-config", "TF_CONFIG is per process");
    if (vm.count("numa-bind")) return no("numa-bind", "the launcher binds its own processes");
  }
  if (vm.count("master-addr")) {
    std::string v = str("master-addr");
    if (Status ok = CheckHost(origin.Name("master-addr"), v); !ok.ok()) return ok.error();
    if (v.size() > 2 && v.front() == '[' && v.back() == ']')
      v = v.substr(1, v.size() - 2);
    o.master_addr = v;
  }
  if (vm.count("master-port")) {
    auto n = ParseInt(origin.Name("master-port"), str("master-port"), 1, 65535);
    if (!n.ok()) return n.error();
    o.master_port = static_cast<int>(*n);
  }
  if (vm.count("rendezvous")) {
    auto r = ParseEnum<RendezvousMode>(origin.Name("rendezvous"), str("rendezvous"),
                                       {{"auto", RendezvousMode::kAuto},
                                        {"env", RendezvousMode::kEnv},
                                        {"mpi", RendezvousMode::kMpi}});
    if (!r.ok()) return r.error();
    o.rendezvous = *r;
  }
  o.local_rank_arg = vm.count("local-rank-arg") > 0;
  o.numa_bind = vm.count("numa-bind") > 0;
  o.tf_config = vm.count("tf-config") > 0;
  if (vm.count("ps-count")) {
    auto n = ParseInt(origin.Name("ps-count"), str("ps-count"), 0, 1 << 20);
    if (!n.ok()) return n.error();
    if (!o.tf_config)
      return Error{origin.Name("ps-count") + "='" + str("ps-count") +
                   "' needs --tf-config"};
    o.ps_count = static_cast<int>(*n);
  }
  if (vm.count("log-dir")) {
    if (str("log-dir").empty())
      return Error{origin.Name("log-dir") + "='' is an empty directory name"};
    o.log_dir = str("log-dir");
  }
  if (vm.count("tag-output") && vm.count("no-tag-output"))
    return Error{"--tag-output and --no-tag-output contradict each other"};
  if (vm.count("tag-output")) o.tag_output = true;
  if (vm.count("no-tag-output")) o.tag_output = false;
  // Strictly digits (no sign, space, hex or exponent), s/m/h allowed; a
  // preflight bound of 0 could never pass, so it starts at 0.1 s.
  for (const char* name : {"grace", "preflight-timeout"}) {
    if (!vm.count(name)) continue;
    const bool grace = std::string(name) == "grace";
    auto d = ParseDuration(origin.Name(name), str(name), grace ? 0 : 0.1);
    if (!d.ok()) return d.error();
    (grace ? o.grace_s : o.preflight_timeout_s) = *d;
  }
  if (vm.count("fail-fast")) {
    auto r = ParseEnum<bool>(origin.Name("fail-fast"), str("fail-fast"),
                             {{"node", false}, {"job", true}});
    if (!r.ok()) return r.error();
    o.fail_fast_job = *r;
  }
  if (vm.count("hang-timeout")) {
    auto d = ParseDuration(origin.Name("hang-timeout"), str("hang-timeout"), 1);
    if (!d.ok()) return d.error();
    o.hang_timeout_s = *d;
    if (vm.count("fail-fast") && !o.fail_fast_job)
      return Error{origin.Name("hang-timeout") + " ends the whole job, but " +
                   origin.Name("fail-fast") + "=node asks to end one node only"};
    o.fail_fast_job = true;
  }
  if (vm.count("max-restarts")) {
    auto n = ParseInt(origin.Name("max-restarts"), str("max-restarts"), 0, 10000);
    if (!n.ok()) return n.error();
    o.max_restarts = static_cast<int>(*n);
    if (o.max_restarts > 0) {
      if (vm.count("fail-fast") && !o.fail_fast_job)
        return Error{origin.Name("max-restarts") + " restarts the whole job, but " +
                     origin.Name("fail-fast") + "=node asks to end one node only"};
      o.fail_fast_job = true;
    }
  }
  if (vm.count("spares")) {
    auto k = ParseInt(origin.Name("spares"), str("spares"), 0, 100000);
    if (!k.ok()) return k.error();
    o.spares = static_cast<int>(*k);
    if (o.spares > 0 && o.max_restarts <= 0)
      return Error{origin.Name("spares") + "=" + std::to_string(o.spares) +
                   " needs --max-restarts: a spare takes a retired node's place at a restart"};
  }
  if (vm.count("retire-after")) {
    auto n = ParseInt(origin.Name("retire-after"), str("retire-after"), 1, 10000);
    if (!n.ok()) return n.error();
    o.retire_after = static_cast<int>(*n);
    if (o.spares <= 0)
      return Error{origin.Name("retire-after") + " retires nodes for spares to replace: give "
                   "--spares K too"};
  }
  if (vm.count("flight-recorder")) {
    auto r = ParseEnum<bool>(origin.Name("flight-recorder"), str("flight-recorder"),
                             {{"auto", true}, {"off", false}});
    if (!r.ok()) return r.error();
    o.flight_recorder = *r;
  }
  if (vm.count("dump-timeout")) {
    auto d = ParseDuration(origin.Name("dump-timeout"), str("dump-timeout"), 1);
    if (!d.ok()) return d.error();
    o.dump_timeout_s = *d;
  }
  if (vm.count("straggler-check")) {
    auto d = ParseDuration(origin.Name("straggler-check"), str("straggler-check"), 1);
    if (!d.ok()) return d.error();
    if (*d < 5)
      return Error{origin.Name("straggler-check") + "=" + str("straggler-check") +
                   " is under 5 s: each look reads every rank's flight record"};
    if (!o.flight_recorder)
      return Error{origin.Name("straggler-check") + " reads the ranks' flight records, but " +
                   origin.Name("flight-recorder") + "=off"};
    if (vm.count("fail-fast") && !o.fail_fast_job)
      return Error{origin.Name("straggler-check") + " compares the job's nodes, but " +
                   origin.Name("fail-fast") + "=node asks to end one node only"};
    o.straggler_check_s = *d;
    o.fail_fast_job = true;
  }
  if (vm.count("retire-slow")) {
    if (o.spares <= 0 || !o.straggler_check_s)
      return Error{origin.Name("retire-slow") + " retires a node the straggler check names for "
                   "a spare to replace: give --spares K and --straggler-check INTERVAL too"};
    o.retire_slow = true;
  }
  if (vm.count("warm-restart")) {
    if (o.max_restarts <= 0)
      return Error{origin.Name("warm-restart") + " keeps interpreters for the next attempt: "
                   "give --max-restarts N too"};
    o.warm_restart = true;
  }
  if (vm.count("preload")) {
    if (!o.warm_restart)
      return Error{origin.Name("preload") + " names what --warm-restart's standbys import: "
                   "give --warm-restart too"};
    const std::string v = str("preload");
    auto bad = [](const std::string& m) {
      if (m.empty()) return true;
      bool start = true;
      for (char ch : m) {
        const bool letter = std::isalpha(static_cast<unsigned char>(ch)) || ch == '_';
        if (ch == '.') {
          if (start) return true;
          start = true;
        } else if (start ? !letter : !(letter || std::isdigit(static_cast<unsigned char>(ch)))) {
          return true;
        } else {
          start = false;
        }
      }
      return start;
    };
    for (const std::string& m : SplitFields(v, ','))
      if (bad(m))
        return Error{origin.Name("preload") + "=" + v + ": '" + m +
                     "' is not a module's name (names like torch or torch.distributed, "
                     "separated by commas)"};
    o.preload = v;
  }
  if (vm.count("metrics-addr")) o.metrics_addr = str("metrics-addr");
  if (vm.count("dcgm-job-dir")) o.dcgm_job_dir = str("dcgm-job-dir");
  if (vm.count("ib")) {
    auto r = ParseEnum<IbMode>(origin.Name("ib"), str("ib"),
                               {{"auto", IbMode::kAuto},
                                {"require", IbMode::kRequire},
                                {"off", IbMode::kOff}});
    if (!r.ok()) return r.error();
    o.ib = *r;
  }
  if (vm.count("proc-root")) {
    if (str("proc-root").empty())
      return Error{origin.Name("proc-root") + "='' is an empty directory name"};
    o.proc_root = str("proc-root");
  }
  if (vm.count("sysfs-root")) {
    if (str("sysfs-root").empty())
      return Error{origin.Name("sysfs-root") + "='' is an empty directory name"};
    o.sysfs_root = str("sysfs-root");
  }
  if (vm.count("preflight")) {
    auto r = ParseEnum<int>(origin.Name("preflight"), str("preflight"),
                            {{"none", 0}, {"tcp", 1}, {"nccl", 2}, {"all", 3}});
    if (!r.ok()) return r.error();
    // The NCCL stage rides on the TCP check's connections.
    o.preflight.tcp = *r != 0;
    o.preflight.nccl = (*r & 2) != 0;
  }
  if (vm.count("preflight-bytes")) {
    auto b = ParseBytes(origin.Name("preflight-bytes"), str("preflight-bytes"));
    if (!b.ok()) return b.error();
    o.preflight_bytes = *b;
  }
  if (vm.count("min-busbw")) {
    std::string v = str("min-busbw");
    char* end = nullptr;
    double g = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(g > 0) || g > 1e6)
      return Error{origin.Name("min-busbw") + "='" + v + "' is not a bandwidth in GB/s (> 0)"};
    o.min_busbw = g;
  }
  for (const char* name : {"preflight-bytes", "min-busbw"})
    if (vm.count(name) && !o.preflight.nccl)
      return Error{origin.Name(name) + "='" + str(name) + "' needs --preflight nccl or all"};
  if (vm.count("quiet") && vm.count("verbose"))
    return Error{"--quiet and --verbose contradict each other"};
  if (vm.count("quiet")) o.verbosity = Verbosity::kQuiet;
  if (vm.count("verbose")) o.verbosity = Verbosity::kVerbose;
  o.json = vm.count("json") > 0;
  o.explain = vm.count("explain") > 0;
  if (o.json && o.explain)
    return Error{"--json and --explain contradict each other"};
  return Ok{};
}

}  // namespace

Result<Invocation> ParseCommandLine(const std::vector<std::string>& args,
                                    const EnvSnapshot& env) {
  Invocation inv;
  const po::options_description desc = Describe();
  size_t i = 0;
  if (!args.empty() && args[0] == "env") {
    inv.subcommand = Subcommand::kEnv;
    i = 1;
  } else if (!args.empty() && args[0] == "probe") {
    inv.subcommand = Subcommand::kProbe;
    i = 1;
  }
  // Split the options from the command: options end at "--" or at the first
  // word that is not an option or an option's value.
  // An option given twice is refused here, at its second appearance:
  // Boost's parser takes quadratic time over repeats (100,000 took 12 s).
  std::vector<std::string> opts;
  std::set<std::string> seen;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;
    opts.push_back(a);
    const bool is_long = a[1] == '-';
    const size_t eq = a.find('=');
    std::string name = a.substr(is_long ? 2 : 1, eq == std::string::npos ? std::string::npos
                                                                         : eq - (is_long ? 2 : 1));
    // Boost keys a short option as "-v".
    const po::option_description* o =
        is_long ? desc.find_nothrow(name, false) : desc.find_nothrow("-" + name, false);
    if (o && !seen.insert(o->long_name()).second)
      return Error{"option '--" + o->long_name() + "' cannot be specified more than once"};
    if (!o && is_long) {
      // A typo: the nearest option, when one is clearly nearest.
      std::vector<std::string> names;
      for (const auto& d : desc.options()) names.push_back(d->long_name());
      const std::string near = NearestWord(name, names);
      if (!near.empty())
        return Error{"unrecognised option '--" + name + "': did you mean '--" + near + "'?"};
    }
    if (eq != std::string::npos) continue;
    if (o && o->semantic()->max_tokens() > 0 && i + 1 < args.size())
      opts.push_back(args[++i]);
  }
  inv.command.assign(args.begin() + static_cast<long>(i), args.end());

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(opts)
                  .options(desc)
                  .style(po::command_line_style::unix_style &
                         ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
  } catch (const po::error& e) {
    return Error{std::string(e.what())};
  }
  // AML_SHIM_* for every option the command line left unset.
  Origins origin;
  std::vector<std::string> env_args;
  for (const OptionRule& rule : OptionRules()) {
    if (!rule.env_twin) continue;
    const char* name = rule.name;
    std::string var = EnvName(name);
    const std::string* value = env.Find(var);
    if (!value || vm.count(name)) continue;
    if (std::string(name) == "tag-output" && vm.count("no-tag-output")) continue;
    if (std::string(name) == "no-tag-output" && vm.count("tag-output")) continue;
    if (IsFlag(desc, name)) {
      auto on = ParseBoolVar(var, *value);
      if (!on.ok()) return on.error();
      if (*on) env_args.push_back(std::string("--") + name);
      else if (std::string(name) == "tag-output" && !vm.count("tag-output"))
        env_args.push_back("--no-tag-output");
    } else {
      if (value->empty())
        return Error{var + "='' is empty: unset it, or give it a value (as --" + name + ")"};
      env_args.push_back(std::string("--") + name + "=" + *value);
    }
    origin.from_env.push_back(name);
    if (std::string(name) == "tag-output") origin.from_env.push_back("no-tag-output");
  }
  try {
    po::store(po::command_line_parser(env_args).options(desc).run(), vm);
  } catch (const po::error& e) {
    return Error{std::string(e.what()) + " (from the environment)"};
  }
  po::notify(vm);

  inv.help = vm.count("help") > 0;
  inv.version = vm.count("version") > 0;
  auto valid = Validate(vm, origin, inv.options);
  if (!valid.ok()) return valid.error();

  auto applies = RefuseInapplicable(vm, origin, inv.subcommand);
  if (!applies.ok()) return applies.error();
  if (inv.subcommand != Subcommand::kRun && !inv.command.empty())
    return Error{"unexpected argument '" + inv.command[0] + "' after '" +
                 (inv.subcommand == Subcommand::kEnv ? "env" : "probe") + "'"};
  if (inv.subcommand == Subcommand::kRun && inv.command.empty() && !inv.help &&
      !inv.version)
    return Error{"no command given: usage: aml-shim [OPTIONS] [--] COMMAND [ARGS...]"};
  return inv;
}

}  // namespace aml
