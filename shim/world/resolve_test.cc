#include "shim/world/resolve.h"

#include <gtest/gtest.h>

#include <tuple>

#include "shim/world/master.h"
#include "shim/world/port.h"

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> m) { return EnvSnapshot(std::move(m)); }

std::map<std::string, std::string> Ompi(int rank, int size, int lrank, int lsize) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(lrank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(lsize)}};
}

TEST(Resolve, SingletonWithoutLauncher) {
  auto w = ResolveRanks(Env({}));
  ASSERT_TRUE(w.ok());
  EXPECT_STREQ(LauncherName(w->source), "singleton");
  EXPECT_EQ(w->rank.value, 0);
  EXPECT_EQ(w->size.value, 1);
  EXPECT_TRUE(w->single_node);
}

TEST(Resolve, OpenMpiSingleNode) {
  auto w = ResolveRanks(Env(Ompi(2, 4, 2, 4)));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->node_rank.value, 0);
  EXPECT_EQ(w->node_count.value, 1);
  EXPECT_TRUE(w->single_node);
}

TEST(Resolve, OnePerNodeMeansNodeIndexIsRank) {
  // Open MPI's node count is job-wide: 4 nodes for 4 ranks.
  auto env = Ompi(3, 4, 0, 1);
  env["OMPI_MCA_orte_num_nodes"] = "4";
  auto w = ResolveRanks(Env(env));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->node_rank_exact);
  EXPECT_EQ(w->node_rank.value, 3);
  EXPECT_EQ(w->node_count.value, 4);
  EXPECT_FALSE(w->single_node);
}

TEST(Resolve, ALoneRankOnItsNodeProvesNothing) {
  // --host a:3,b:1: rank 3 sees a local size of 1, rank 0 one of 3; neither
  // may guess, or they would decide differently.
  for (auto [rank, lrank, lsize] : {std::tuple{3, 0, 1}, std::tuple{0, 0, 3}}) {
    auto env = Ompi(rank, 4, lrank, lsize);
    env["OMPI_MCA_orte_num_nodes"] = "2";
    auto w = ResolveRanks(Env(env));
    ASSERT_TRUE(w.ok()) << w.error().message;
    EXPECT_FALSE(w->node_rank_exact) << rank;
    EXPECT_EQ(w->node_count.value, 2);
    EXPECT_FALSE(w->single_node);
  }
}

TEST(Resolve, PackedLookingMappingIsNotProven) {
  // mpirun --map-by node puts rank 1 on node 1 with the same local sizes.
  auto w = ResolveRanks(Env(Ompi(5, 8, 1, 4)));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->node_rank_exact);
  EXPECT_EQ(w->node_count.value, 2);
  EXPECT_NE(w->node_rank.why.find("not provable from Open MPI's variables "
                                   "(OMPI_COMM_WORLD_LOCAL_SIZE=4 of OMPI_COMM_WORLD_SIZE=8"),
            std::string::npos)
      << w->node_rank.why;
}

TEST(Resolve, UnevenMappingIsNotAnErrorHere) {
  auto w = ResolveRanks(Env(Ompi(5, 8, 1, 3)));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->node_rank_exact);
}

TEST(Resolve, NodeRankYouSetIsTaken) {
  auto env = Ompi(0, 1, 0, 1);
  env["NODE_RANK"] = "5";
  auto w = ResolveRanks(Env(env));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->node_rank_exact);
  EXPECT_EQ(w->node_rank.value, 5);
  EXPECT_EQ(w->node_rank.why, "NODE_RANK=5 (set by you)");
  env = Ompi(5, 8, 1, 3);
  env["NODE_RANK"] = "1";
  w = ResolveRanks(Env(env));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->node_rank_exact);
  EXPECT_EQ(w->node_rank.value, 1);
}

// Before, GROUP_RANK=1 was silently replaced by NODE_RANK=0's value.
TEST(Resolve, NodeRankAndGroupRankThatDisagreeAreRefused) {
  auto env = Ompi(0, 1, 0, 1);
  env["NODE_RANK"] = "0";
  env["GROUP_RANK"] = "1";
  auto w = ResolveRanks(Env(env));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message,
            "NODE_RANK='0' and GROUP_RANK='1' disagree: both are this node's index; unset "
            "one, or set them alike");
  env["GROUP_RANK"] = "0";
  EXPECT_TRUE(ResolveRanks(Env(env)).ok());
}

TEST(Resolve, MpiBeatsSlurmAndOuterStepIsOnlyANote) {
  auto env = Ompi(5, 8, 1, 4);
  env.insert({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODEID", "1"}});
  auto w = ResolveRanks(Env(env));
  ASSERT_TRUE(w.ok());
  EXPECT_STREQ(LauncherName(w->source), "Open MPI");
  EXPECT_EQ(w->rank.value, 5);
  EXPECT_TRUE(w->warnings.empty());
  ASSERT_FALSE(w->notes.empty());
  EXPECT_NE(w->notes.back().find("outer launcher"), std::string::npos);
}

TEST(Resolve, AgreeingSlurmFillsNodeIndex) {
  // srun --mpi=pmix: PMIx gives the rank, Slurm the rest.
  auto w = ResolveRanks(Env({{"PMIX_RANK", "3"}, {"SLURM_PROCID", "3"},
                             {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "1"},
                             {"SLURM_NODEID", "1"}, {"SLURM_STEP_NUM_NODES", "2"},
                             {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}}));
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_STREQ(LauncherName(w->source), "PMIx");
  EXPECT_EQ(w->size.value, 4);
  EXPECT_EQ(w->local_rank.value, 1);
  EXPECT_EQ(w->local_size.value, 2);
  EXPECT_EQ(w->node_rank.value, 1);
  EXPECT_EQ(w->node_count.value, 2);
}

TEST(Resolve, SrunPmi2IsNotCalledHydra) {
  auto w = ResolveRanks(Env({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"PMI_JOBID", "7.0"},
                             {"SLURM_MPI_TYPE", "pmi2"}, {"SLURM_PROCID", "1"},
                             {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_LOCALID", "1"},
                             {"SLURM_NODEID", "0"}, {"SLURM_STEP_NUM_NODES", "1"},
                             {"SLURM_STEP_TASKS_PER_NODE", "2"}}));
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_STREQ(LauncherName(w->source), "Slurm PMI-2 (srun --mpi=pmi2)");
  EXPECT_TRUE(IsMpiLauncher(w->source));
  EXPECT_EQ(w->local_rank.value, 1);
  EXPECT_EQ(w->node_rank.value, 0);
}

TEST(Resolve, PmixAloneHasNoSize) {
  auto w = ResolveRanks(Env({{"PMIX_RANK", "3"}}));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message.rfind("PMIX_RANK=3 is set but no variable gives the world size", 0), 0u)
      << w.error().message;
}

TEST(Resolve, ConflictingTorchPresetIsWarned) {
  auto env = Ompi(3, 4, 3, 4);
  env.insert({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  auto w = ResolveRanks(Env(env));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->rank.value, 3);
  ASSERT_EQ(w->warnings.size(), 1u);
  EXPECT_EQ(w->warnings[0],
            "torch environment variables (RANK=0, WORLD_SIZE=1) disagree with Open MPI "
            "(OMPI_COMM_WORLD_RANK=3, OMPI_COMM_WORLD_SIZE=4, OMPI_COMM_WORLD_LOCAL_RANK=3, "
            "OMPI_COMM_WORLD_LOCAL_SIZE=4); using Open MPI's");
}

TEST(Resolve, HydraBeatsTorchPresetThatAgrees) {
  auto w = ResolveRanks(Env({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"},
                             {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"},
                             {"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  ASSERT_TRUE(w.ok());
  EXPECT_STREQ(LauncherName(w->source), "MPICH/Intel MPI (Hydra)");
  EXPECT_TRUE(w->warnings.empty());
}

TEST(Resolve, TorchPresetAloneAssumesOnePerNode) {
  auto w = ResolveRanks(Env({{"RANK", "2"}, {"WORLD_SIZE", "4"}}));
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->node_rank_exact);
  EXPECT_EQ(w->local_rank.value, 0);
  EXPECT_EQ(w->local_size.value, 1);
  EXPECT_EQ(w->node_rank.value, 2);
  EXPECT_NE(w->local_rank.why.find("assumed"), std::string::npos);
}

TEST(Resolve, MalformedLowerSourceIsStillAnError) {
  auto env = Ompi(0, 2, 0, 2);
  env["SLURM_PROCID"] = "zero";
  env["SLURM_NTASKS"] = "2";
  auto w = ResolveRanks(Env(env));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message, "SLURM_PROCID='zero' is not an integer");
}

// --- master address and port ---

// The world with its master when it is known without MPI; `by_mpi` says
// whether the MPI rendezvous would run instead.
Result<World> Resolve(std::map<std::string, std::string> m, MasterRequest req = {},
                      bool* by_mpi = nullptr) {
  EnvSnapshot env = Env(std::move(m));
  auto w = ResolveRanks(env);
  if (!w.ok()) return w;
  auto plan = ResolveMaster(env, req, *w);
  if (!plan.ok()) return plan.error();
  if (by_mpi) *by_mpi = std::holds_alternative<MasterByRendezvous>(*plan);
  if (const auto* known = std::get_if<MasterKnown>(&*plan)) return WithMaster(*w, *known);
  // What the rendezvous is given to verify, where anything is.
  const auto& by = std::get<MasterByRendezvous>(*plan);
  if (by.addr) w->master_addr = *by.addr;
  if (by.port) w->master_port = *by.port;
  return w;
}

TEST(Master, SingleNodeAzureMlMatchesSeeds) {
  auto env = Ompi(1, 4, 1, 4);
  env["AZ_BATCHAI_MPI_MASTER_NODE"] = "10.0.0.5";
  env["AZ_BATCH_MASTER_NODE"] = "10.0.0.4:6105";
  auto w = Resolve(env);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->master_addr.value, "10.0.0.5");
  EXPECT_EQ(w->master_port.value, 54965);
}

TEST(Master, MultiNodeAzureMlMatchesSeeds) {
  auto env = Ompi(5, 8, 1, 4);
  env["AZ_BATCH_MASTER_NODE"] = "10.0.0.4:12345";
  bool by_mpi = false;
  auto w = Resolve(env, {}, &by_mpi);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(by_mpi);  // for the exact NODE_RANK; the master is given
  EXPECT_EQ(w->master_addr.value, "10.0.0.4");
  EXPECT_EQ(w->master_port.value, 6105);  // not the port inside the variable
}

TEST(Master, AzureIpv6) {
  auto env = Ompi(5, 8, 1, 4);
  env["NODE_RANK"] = "1";
  env["AZ_BATCH_MASTER_NODE"] = "[fd00::4]:6105";
  auto w = Resolve(env);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->master_addr.value, "fd00::4");
}

TEST(Master, MalformedAzureIsAnErrorEvenWhenUnused) {
  auto env = Ompi(1, 4, 1, 4);
  env["AZ_BATCH_MASTER_NODE"] = "10.0.0.4:61o5";
  auto w = Resolve(env);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message,
            "AZ_BATCH_MASTER_NODE='10.0.0.4:61o5' has a bad port '61o5' (expected 1..65535)");
}

TEST(Master, UserValuesWin) {
  auto env = Ompi(5, 8, 1, 4);
  env["NODE_RANK"] = "1";
  env["AZ_BATCH_MASTER_NODE"] = "10.0.0.4:6105";
  env["MASTER_ADDR"] = "head";
  env["MASTER_PORT"] = "7000";
  auto w = Resolve(env);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->master_addr.value, "head");
  EXPECT_EQ(w->master_port.value, 7000);
  MasterRequest o;
  o.addr = "cli";
  o.port = 8000;
  auto w2 = Resolve(env, o);
  EXPECT_EQ(w2->master_addr.value, "cli");
  EXPECT_EQ(w2->master_port.value, 8000);
}

TEST(Master, EmptyMasterAddrIsAnError) {
  auto w = Resolve({{"MASTER_ADDR", ""}});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message,
            "MASTER_ADDR is set but empty: unset it, or set it (or --master-addr) to rank 0's "
            "address");
}

// On one node too (before, only --master-addr was checked; with --preflight
// tcp a newline took the whole timeout to fail).
TEST(Master, AMasterAddressWithControlCharactersIsRefusedNamingItsVariable) {
  auto w = Resolve({{"MASTER_ADDR", "10.0.0.1\nx"}});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message, "MASTER_ADDR='10.0.0.1\nx' is not a host name or address");
  auto az = Resolve({{"AZ_BATCHAI_MPI_MASTER_NODE", "host\x1b[31m"}});
  ASSERT_FALSE(az.ok());
  EXPECT_EQ(az.error().message,
            "AZ_BATCHAI_MPI_MASTER_NODE='host\x1b[31m' is not a host name or address");
  EXPECT_TRUE(Resolve({{"MASTER_ADDR", "[fe80::1]"}}).ok());
}

TEST(Master, BadMasterPortIsAnError) {
  auto w = Resolve({{"MASTER_PORT", "http"}});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message, "MASTER_PORT='http' is not an integer");
}

TEST(Master, SlurmFirstHost) {
  auto w = Resolve({{"SLURM_PROCID", "2"}, {"SLURM_STEP_NUM_TASKS", "4"},
                    {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "2"},
                    {"SLURM_STEP_NODELIST", "gpu[007-010]"}, {"SLURM_JOB_ID", "4242"},
                    {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"}});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->master_addr.value, "gpu007");
  EXPECT_EQ(w->master_port.value, DerivedPort("4242.0"));
  EXPECT_NE(w->master_port.why.find("SLURM_JOB_ID=4242"), std::string::npos);
}

// A TrainJob's pod: PET_* name the node and the master; a PyTorchJob's
// (1.7 and later) also has its pod's RANK and WORLD_SIZE = pods x
// nprocPerNode, which are not read as a process's (only noted).
TEST(Master, KubeflowPodsAreOneShimPerNode) {
  auto train = Resolve({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_NPROC_PER_NODE", "4"},
                        {"PET_MASTER_ADDR", "10.0.0.9"}, {"PET_MASTER_PORT", "29400"}});
  ASSERT_TRUE(train.ok()) << train.error().message;
  EXPECT_EQ(train->source, Launcher::kKubeflow);
  EXPECT_EQ(train->rank.value, 1);
  EXPECT_EQ(train->size.value, 2);
  EXPECT_EQ(train->node_rank.value, 1);
  EXPECT_EQ(train->master_addr.value, "10.0.0.9");
  EXPECT_EQ(train->master_port.value, 29400);
  auto job = Resolve({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_NPROC_PER_NODE", "4"},
                      {"MASTER_ADDR", "job-master-0"}, {"MASTER_PORT", "23456"},
                      {"WORLD_SIZE", "8"}, {"RANK", "1"}});
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->source, Launcher::kKubeflow);
  EXPECT_EQ(job->size.value, 2);  // not WORLD_SIZE=8
  EXPECT_EQ(job->master_addr.value, "job-master-0");
  EXPECT_EQ(job->master_port.value, 23456);
  EXPECT_TRUE(job->warnings.empty());
  bool noted = false;
  for (const auto& n : job->notes) noted = noted || n.find("describe the pods") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Master, SingleNodeUsesLoopbackAndJobPort) {
  auto env = Ompi(0, 2, 0, 2);
  env["OMPI_MCA_ess_base_jobid"] = "3849519105";
  bool by_mpi = true;
  auto w = Resolve(env, {}, &by_mpi);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->master_addr.value, "127.0.0.1");
  EXPECT_EQ(w->master_port.value, DerivedPort("3849519105"));
  EXPECT_FALSE(by_mpi);
}

TEST(Master, NoJobIdFallsBackTo29500) {
  auto w = Resolve({});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->master_port.value, 29500);
}

TEST(Master, MultiNodeWithNothingNeedsRendezvous) {
  auto env = Ompi(5, 8, 0, 1);
  env["OMPI_MCA_orte_num_nodes"] = "8";
  bool by_mpi = false;
  auto w = Resolve(env, {}, &by_mpi);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(by_mpi);
  MasterRequest env_only;
  env_only.rendezvous = RendezvousMode::kEnv;
  auto e = Resolve(env, env_only);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("--rendezvous env forbids the rendezvous"), std::string::npos);
}

TEST(Master, AnUnprovenNodeRankNeedsTheRendezvousOrStops) {
  // --map-by node with MASTER_ADDR set: auto still runs the rendezvous,
  // for NODE_RANK; env stops the job and says what to do.
  auto env = Ompi(1, 4, 0, 2);
  env["MASTER_ADDR"] = "10.0.0.1";
  bool by_mpi = false;
  auto w = Resolve(env, {}, &by_mpi);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(by_mpi);
  EXPECT_EQ(w->master_addr.value, "10.0.0.1");
  MasterRequest env_only;
  env_only.rendezvous = RendezvousMode::kEnv;
  auto e = Resolve(env, env_only);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message.rfind("NODE_RANK cannot be proven for this job: not provable from "
                                    "Open MPI's variables", 0),
            0u)
      << e.error().message;
  EXPECT_NE(e.error().message.find("no PMIx server gave it, and --rendezvous env forbids the "
                                   "rendezvous that computes it: set NODE_RANK on every rank, or "
                                   "use --rendezvous auto"),
            std::string::npos);
  env["NODE_RANK"] = "1";
  ASSERT_TRUE(Resolve(env, env_only, &by_mpi).ok());
  EXPECT_FALSE(by_mpi);
}

TEST(Master, SingleNodeNeverCallsMpiInAuto) {
  bool by_mpi = true;
  ASSERT_TRUE(Resolve(Ompi(0, 4, 0, 4), {}, &by_mpi).ok());
  EXPECT_FALSE(by_mpi);
  MasterRequest mpi;
  mpi.rendezvous = RendezvousMode::kMpi;
  ASSERT_TRUE(Resolve(Ompi(0, 4, 0, 4), mpi, &by_mpi).ok());
  EXPECT_TRUE(by_mpi);
}

TEST(Port, DerivedIsStableAndInRange) {
  EXPECT_EQ(DerivedPort("job-1"), DerivedPort("job-1"));
  EXPECT_NE(DerivedPort("job-1"), DerivedPort("job-2"));
  for (int i = 0; i < 1000; ++i) {
    int p = DerivedPort(std::to_string(i));
    EXPECT_GE(p, kDerivedPortMin);
    EXPECT_LE(p, kDerivedPortMax);
  }
}

}  // namespace
}  // namespace aml
