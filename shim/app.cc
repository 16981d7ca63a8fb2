#include "shim/app.h"

#include <unistd.h>

#include <iostream>

#include "shim/contract.h"
#include "shim/env_command.h"
#include "shim/exec.h"
#include "shim/log.h"
#include "shim/master.h"
#include "shim/options.h"
#include "shim/resolve.h"
#include "shim/version.h"

namespace aml {
namespace {

int Fail(const std::string& message) {
  LogError(message);
  return kExitShimFailure;
}

// Features whose options parse today but whose behaviour is not built yet
// are refused rather than silently ignored.
Status RefuseUnbuilt(const Options& o) {
  if (o.nproc_kind != NprocKind::kCount || o.nproc != 1)
    return Error{"--nproc-per-node (per-node fan-out) is not implemented in "
                 "this version"};
  if (o.log_dir) return Error{"--log-dir is not implemented in this version"};
  if (o.tag_output.value_or(false))
    return Error{"--tag-output is not implemented in this version"};
  if (o.tf_config) return Error{"--tf-config is not implemented in this version"};
  if (o.preflight.tcp || o.preflight.nccl)
    return Error{"--preflight is not implemented in this version"};
  if (o.ib == IbMode::kRequire)
    return Error{"--ib require is not implemented in this version"};
  return Ok{};
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
  if (inv->subcommand == Subcommand::kProbe)
    return Fail("'aml-shim probe' is not implemented in this version");
  auto unbuilt = RefuseUnbuilt(o);
  if (!unbuilt.ok()) return Fail(unbuilt.error().message);

  auto world = ResolveRanks(env);
  if (!world.ok()) return Fail(world.error().message);
  auto master = ResolveMaster(env, o, *world);
  if (!master.ok()) return Fail(master.error().message);
  if (world->needs_rendezvous)
    return Fail("this job spans " + std::to_string(world->node_count.value) +
                " nodes and nothing names its master (MASTER_ADDR, "
                "AZ_BATCH_MASTER_NODE, Slurm's node list); MPI rendezvous is "
                "not implemented in this version: set --master-addr");
  if (inv->subcommand != Subcommand::kEnv)
    for (const auto& w : world->warnings) LogWarning(w);

  ChildSlot slot;
  std::vector<ChildPlan> plans;
  ChildPlan plan;
  plan.vars = BuildContract(*world, env, slot);
  plan.argv = BuildArgv(inv->command, o, plan.vars);
  plans.push_back(std::move(plan));

  if (inv->subcommand == Subcommand::kEnv) {
    std::cout << FormatEnv(*world, plans, o) << std::flush;
    return 0;
  }
  LogVerbose("rank " + std::to_string(world->rank.value) + " of " +
             std::to_string(world->size.value) + " (" + world->source +
             "), master " + world->master_addr.value + ":" +
             std::to_string(world->master_port.value));
  std::string why;
  int code = ExecCommand(plans[0].argv, ApplyContract(env, plans[0].vars), &why);
  LogError(why);
  return code;
}

}  // namespace aml
