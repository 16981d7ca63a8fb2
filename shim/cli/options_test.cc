#include "shim/cli/options.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

Result<Invocation> Parse(std::vector<std::string> args,
                         std::map<std::string, std::string> env = {}) {
  return ParseCommandLine(args, EnvSnapshot(std::move(env)));
}

TEST(Options, CommandAfterOptions) {
  auto inv = Parse({"--master-port", "1234", "python", "-u", "train.py", "--lr", "3"});
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->options.master_port, 1234);
  EXPECT_EQ(inv->command, (std::vector<std::string>{"python", "-u", "train.py", "--lr", "3"}));
}

TEST(Options, DoubleDashEndsOptions) {
  auto inv = Parse({"-v", "--", "--weird-command", "--verbose"});
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->options.verbosity, Verbosity::kVerbose);
  EXPECT_EQ(inv->command, (std::vector<std::string>{"--weird-command", "--verbose"}));
}

TEST(Options, EqualsForm) {
  auto inv = Parse({"--nproc-per-node=4", "--grace=2.5", "x"});
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->options.nproc, 4);
  EXPECT_DOUBLE_EQ(inv->options.grace_s, 2.5);
}

TEST(Options, EveryEnumParses) {
  auto inv = Parse({"--nproc-per-node", "gpu", "--rendezvous", "mpi", "--ib", "require",
                    "--preflight", "all", "--tf-config", "--ps-count", "2",
                    "--local-rank-arg", "--log-dir", "/tmp/l", "--no-tag-output",
                    "--sysfs-root", "/f", "--master-addr", "[fe80::1]", "x"});
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  const Options& o = inv->options;
  EXPECT_EQ(o.nproc_kind, NprocKind::kGpu);
  EXPECT_EQ(o.rendezvous, RendezvousMode::kMpi);
  EXPECT_EQ(o.ib, IbMode::kRequire);
  EXPECT_TRUE(o.preflight.tcp && o.preflight.nccl);
  EXPECT_TRUE(o.tf_config);
  EXPECT_EQ(o.ps_count, 2);
  EXPECT_TRUE(o.local_rank_arg);
  EXPECT_EQ(o.log_dir, "/tmp/l");
  EXPECT_EQ(o.tag_output, false);
  EXPECT_EQ(o.sysfs_root, "/f");
  EXPECT_EQ(o.master_addr, "fe80::1");
}

TEST(Options, EnvironmentTwinsAndCommandLineWins) {
  auto inv = Parse({"--master-port", "1", "x"},
                   {{"AML_SHIM_MASTER_PORT", "2"}, {"AML_SHIM_NPROC_PER_NODE", "8"},
                    {"AML_SHIM_LOCAL_RANK_ARG", "1"}, {"AML_SHIM_TAG_OUTPUT", "0"},
                    {"AML_SHIM_GRACE", "5"}});
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->options.master_port, 1);
  EXPECT_EQ(inv->options.nproc, 8);
  EXPECT_TRUE(inv->options.local_rank_arg);
  EXPECT_EQ(inv->options.tag_output, false);
  EXPECT_DOUBLE_EQ(inv->options.grace_s, 5);
  auto cli = Parse({"--tag-output", "x"}, {{"AML_SHIM_TAG_OUTPUT", "0"}});
  EXPECT_EQ(cli->options.tag_output, true);
}

TEST(Options, ErrorsNameOptionAndValue) {
  struct {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    const char* msg;
  } cases[] = {
      {{"--master-port", "0", "x"}, {}, "--master-port='0' is out of range (expected 1..65535)"},
      {{"x"}, {{"AML_SHIM_MASTER_PORT", "abc"}}, "AML_SHIM_MASTER_PORT='abc' is not an integer"},
      {{"--nproc-per-node", "many", "x"}, {},
       "--nproc-per-node='many' is not an integer; expected a count, 'gpu' or 'auto'"},
      {{"--rendezvous", "tcp", "x"}, {}, "--rendezvous='tcp' is not one of auto|env|mpi"},
      {{"--ib", "on", "x"}, {}, "--ib='on' is not one of auto|require|off"},
      {{"--preflight", "gpu", "x"}, {}, "--preflight='gpu' is not one of none|tcp|nccl|all"},
      {{"--grace", "-1", "x"}, {},
       "--grace='-1' is not a duration from 0 s to 7 days (seconds, or with s, m or h: 600, "
       "15s, 10m, 1.5h)"},
      {{"--grace", " 5", "x"}, {}, "--grace=' 5' is not a duration from 0 s to 7 days (seconds, "
       "or with s, m or h: 600, 15s, 10m, 1.5h)"},
      {{"--grace", "0x10", "x"}, {}, "--grace='0x10' is not a duration from 0 s to 7 days "
       "(seconds, or with s, m or h: 600, 15s, 10m, 1.5h)"},
      {{"--preflight-timeout", "0", "x"}, {}, "--preflight-timeout='0' is not a duration from "
       "0.1 s to 7 days (seconds, or with s, m or h: 600, 15s, 10m, 1.5h)"},
      {{"x"}, {{"AML_SHIM_HANG_TIMEOUT", "5d"}}, "AML_SHIM_HANG_TIMEOUT='5d' is not a duration "
       "from 1 s to 7 days (seconds, or with s, m or h: 600, 15s, 10m, 1.5h)"},
      {{"--fail-fast", "node", "--hang-timeout", "10m", "x"}, {},
       "--hang-timeout ends the whole job, but --fail-fast=node asks to end one node only"},
      {{"--fail-fast", "all", "x"}, {}, "--fail-fast='all' is not one of node|job"},
      {{"x"}, {{"AML_SHIM_LOG_DIR", ""}},
       "AML_SHIM_LOG_DIR='' is empty: unset it, or give it a value (as --log-dir)"},
      {{"x"}, {{"AML_SHIM_GRACE", ""}},
       "AML_SHIM_GRACE='' is empty: unset it, or give it a value (as --grace)"},
      {{"--fail-fast", "node", "--max-restarts", "2", "x"}, {},
       "--max-restarts restarts the whole job, but --fail-fast=node asks to end one node only"},
      {{"x"}, {{"AML_SHIM_MAX_RESTARTS", "-1"}},
       "AML_SHIM_MAX_RESTARTS='-1' is out of range (expected 0..10000)"},
      {{"--ps-count", "2", "x"}, {}, "--ps-count='2' needs --tf-config"},
      {{"--preflight", "tcp", "--min-busbw", "200", "x"}, {},
       "--min-busbw='200' needs --preflight nccl or all"},
      {{"--preflight", "nccl", "x"}, {{"AML_SHIM_MIN_BUSBW", "fast"}},
       "AML_SHIM_MIN_BUSBW='fast' is not a bandwidth in GB/s (> 0)"},
      {{"--preflight", "nccl", "--preflight-bytes", "3", "x"}, {},
       "--preflight-bytes='3' is not a size from 4 to 64G (bytes, or with K/M/G)"},
      {{"x"}, {{"AML_SHIM_VERBOSE", "maybe"}}, "AML_SHIM_VERBOSE='maybe' is not a boolean (use 1/0, true/false)"},
      {{"--quiet", "--verbose", "x"}, {}, "--quiet and --verbose contradict each other"},
      {{"--straggler-check", "2s", "x"}, {},
       "--straggler-check=2s is under 5 s: each look reads every rank's flight record"},
      {{"--straggler-check", "1m", "--flight-recorder", "off", "x"}, {},
       "--straggler-check reads the ranks' flight records, but --flight-recorder=off"},
      {{"--fail-fast", "node", "--straggler-check", "1m", "x"}, {},
       "--straggler-check compares the job's nodes, but --fail-fast=node asks to end one node "
       "only"},
      {{"--straggler-check", "1m", "--retire-slow", "x"}, {},
       "--retire-slow retires a node the straggler check names for a spare to replace: give "
       "--spares K and --straggler-check INTERVAL too"},
      {{}, {}, "no command given: usage: aml-shim [OPTIONS] [--] COMMAND [ARGS...]"},
      {{"--json", "x"}, {}, "--json does not apply to running a command (use 'aml-shim env')"},
      {{"env", "extra"}, {}, "unexpected argument 'extra' after 'env'"},
      {{"probe", "--nproc-per-node", "8"}, {}, "--nproc-per-node does not apply to 'aml-shim probe'"},
      {{"probe", "--ib", "off"}, {}, "--ib does not apply to 'aml-shim probe'"},
      {{"env", "--grace", "5"}, {},
       "--grace does not apply to 'aml-shim env' (it only applies when running a command)"},
      {{"env", "--numa-bind"}, {},
       "--numa-bind does not apply to 'aml-shim env' (it only applies when running a command)"},
  };
  for (const auto& c : cases) {
    auto inv = Parse(c.args, c.env);
    ASSERT_FALSE(inv.ok()) << c.msg;
    EXPECT_EQ(inv.error().message, c.msg);
  }
}

TEST(Options, NcclPreflightSizeAndFloor) {
  auto inv = Parse({"--preflight", "nccl", "--preflight-bytes", "8G", "x"},
                   {{"AML_SHIM_MIN_BUSBW", "460"}});
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_TRUE(inv->options.preflight.tcp);  // the NCCL stage rides on the TCP check
  EXPECT_EQ(inv->options.preflight_bytes, uint64_t{8} << 30);
  EXPECT_EQ(inv->options.min_busbw, 460.0);
  auto def = Parse({"x"});
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->options.preflight_bytes, uint64_t{256} << 20);
  EXPECT_FALSE(def->options.min_busbw.has_value());
}

TEST(Options, MaxRestartsImpliesTheJobWidePlane) {
  auto inv = Parse({"x"}, {{"AML_SHIM_MAX_RESTARTS", "3"}});
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->options.max_restarts, 3);
  EXPECT_TRUE(inv->options.fail_fast_job);
  EXPECT_TRUE(WantsControlPlane(inv->options));
  auto zero = Parse({"--max-restarts", "0", "x"});
  ASSERT_TRUE(zero.ok());
  EXPECT_FALSE(WantsControlPlane(zero->options));  // off costs nothing
}

TEST(Options, StragglerCheckKeepsTheRecorderAndImpliesTheJobWidePlane) {
  auto inv = Parse({"x"}, {{"AML_SHIM_STRAGGLER_CHECK", "90s"}});
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(*inv->options.straggler_check_s, 90);
  EXPECT_TRUE(inv->options.fail_fast_job);
  EXPECT_TRUE(WantsControlPlane(inv->options));
  EXPECT_TRUE(WantsFlightRecorder(inv->options));
  auto retire = Parse({"--straggler-check", "1m", "--max-restarts", "2", "--spares", "1",
                       "--retire-slow", "x"});
  ASSERT_TRUE(retire.ok()) << retire.error().message;
  EXPECT_TRUE(retire->options.retire_slow);
  auto off = Parse({"x"});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(WantsFlightRecorder(off->options));
}

TEST(Options, NoTagOutputHasItsVariableToo) {
  auto off = Parse({"x"}, {{"AML_SHIM_NO_TAG_OUTPUT", "1"}});
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->options.tag_output, std::optional<bool>(false));
  auto cli = Parse({"--tag-output", "x"}, {{"AML_SHIM_NO_TAG_OUTPUT", "1"}});
  ASSERT_TRUE(cli.ok()) << cli.error().message;  // the command line wins
  EXPECT_EQ(cli->options.tag_output, std::optional<bool>(true));
  auto bad = Parse({"x"}, {{"AML_SHIM_NO_TAG_OUTPUT", "maybe"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("AML_SHIM_NO_TAG_OUTPUT='maybe'"), std::string::npos)
      << bad.error().message;
}

TEST(Options, UnknownOptionIsAnError) {
  auto inv = Parse({"--nproc", "2", "x"});
  ASSERT_FALSE(inv.ok());
  EXPECT_NE(inv.error().message.find("--nproc"), std::string::npos) << inv.error().message;
  auto missing = Parse({"--master-port"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("master-port"), std::string::npos);
}

TEST(Options, EveryOptionHasASubcommandRule) {
  EXPECT_EQ(OptionsWithoutScope(), std::vector<std::string>{});
}

TEST(Options, EnvironmentTwinsThatDoNotApplyAreLeftAlone) {
  auto env = Parse({"env"}, {{"AML_SHIM_LOG_DIR", "/tmp/x"}, {"AML_SHIM_PREFLIGHT", "tcp"}});
  ASSERT_TRUE(env.ok()) << env.error().message;
  auto probe = Parse({"probe"}, {{"AML_SHIM_NPROC_PER_NODE", "8"}});
  ASSERT_TRUE(probe.ok()) << probe.error().message;
}

TEST(Options, ANodeLauncherTakesNoPerProcessOption) {
  auto inv = Parse({"--node-launcher", "torchrun", "--nproc-per-node", "8", "train.py"});
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_TRUE(inv->options.node_launcher);
  EXPECT_FALSE(inv->options.nproc_given);  // torchrun's own option, after the command
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--node-launcher", "--nproc-per-node", "8", "x"},
        {"--node-launcher", "--local-rank-arg", "x"},
        {"--node-launcher", "--numa-bind", "x"}}) {
    auto bad = Parse(args);
    ASSERT_FALSE(bad.ok()) << args[1];
    EXPECT_EQ(bad.error().message.rfind("--node-launcher and " + args[1] + " do not go together", 0),
              0u)
        << bad.error().message;
  }
  auto twin = Parse({"x"}, {{"AML_SHIM_NODE_LAUNCHER", "1"}});
  ASSERT_TRUE(twin.ok()) << twin.error().message;
  EXPECT_TRUE(twin->options.node_launcher);
}

TEST(Options, Subcommands) {
  auto env = Parse({"env", "--explain"});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->subcommand, Subcommand::kEnv);
  EXPECT_TRUE(env->options.explain);
  auto probe = Parse({"probe", "--json", "--sysfs-root", "/x"});
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(probe->subcommand, Subcommand::kProbe);
  EXPECT_EQ(probe->options.sysfs_root, "/x");
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_NE(HelpText().find("--nproc-per-node"), std::string::npos);
}

}  // namespace
}  // namespace aml

namespace aml {
namespace {

// Refused at the second appearance, whatever the form: a million repeats
// (a script's runaway loop) are refused as fast as two. Boost's own check
// took quadratic time: 100,000 repeats took 12 s, this test's million
// would outlast ctest's timeout.
// A typo gets the nearest option (before: "unrecognised option" alone);
// a word near none gets Boost's message as before.
TEST(Options, AMistypedOptionIsAnsweredWithTheNearestOne) {
  auto inv = Parse({"--nproc-per-nod", "2", "x"});
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().message,
            "unrecognised option '--nproc-per-nod': did you mean '--nproc-per-node'?");
  inv = Parse({"--max-restart=2", "x"});
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().message,
            "unrecognised option '--max-restart': did you mean '--max-restarts'?");
  inv = Parse({"--frobnicate", "x"});
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().message.find("did you mean"), std::string::npos) << inv.error().message;
  EXPECT_NE(inv.error().message.find("--frobnicate"), std::string::npos) << inv.error().message;
}

TEST(Options, AnOptionGivenTwiceIsRefusedAtOnceInAnyForm) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"-v", "--verbose", "x"}, {"--grace=5", "--grace", "6", "x"},
           {"--grace", "5", "--grace=5", "x"}}) {
    auto inv = Parse(args);
    ASSERT_FALSE(inv.ok()) << args[0];
    EXPECT_NE(inv.error().message.find("cannot be specified more than once"), std::string::npos)
        << inv.error().message;
  }
  std::vector<std::string> many(1000000, "-v");
  many.push_back("x");
  auto inv = Parse(many);
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().message, "option '--verbose' cannot be specified more than once");
}

}  // namespace
}  // namespace aml
