#include "shim/world/sources.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> m) { return EnvSnapshot(std::move(m)); }

TEST(OpenMpi, ReadsQuartet) {
  auto w = ReadOpenMpi(Env({{"OMPI_COMM_WORLD_RANK", "5"},
                            {"OMPI_COMM_WORLD_SIZE", "8"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                            {"OMPI_COMM_WORLD_NODE_RANK", "1"}}));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(*w);
  EXPECT_EQ((*w)->rank->value, 5);
  EXPECT_EQ((*w)->rank->why, "OMPI_COMM_WORLD_RANK=5");
  EXPECT_EQ((*w)->size->value, 8);
  EXPECT_EQ((*w)->local_rank->value, 1);
  EXPECT_EQ((*w)->local_size->value, 4);
  // OMPI_COMM_WORLD_NODE_RANK is not the node index.
  EXPECT_FALSE((*w)->node_rank);
}

TEST(OpenMpi, AbsentIsNullopt) {
  auto w = ReadOpenMpi(Env({}));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(*w);
}

TEST(OpenMpi, Errors) {
  struct {
    std::map<std::string, std::string> env;
    const char* msg;
  } cases[] = {
      {{{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
       "OMPI_COMM_WORLD_RANK='x' is not an integer"},
      {{{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
       "OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"},
      {{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}},
       "OMPI_COMM_WORLD_SIZE='0' is out of range (expected 1..16777216)"},
      {{{"OMPI_COMM_WORLD_RANK", "-1"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
       "OMPI_COMM_WORLD_RANK='-1' is out of range (expected 0..16777216)"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}},
       "OMPI_COMM_WORLD_RANK=1 is set but OMPI_COMM_WORLD_SIZE is not"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
       "OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "5"}},
       "OMPI_COMM_WORLD_LOCAL_SIZE=5 is larger than OMPI_COMM_WORLD_SIZE=4"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}},
       "OMPI_COMM_WORLD_LOCAL_SIZE is not set although OMPI_COMM_WORLD_RANK=1 is (Open MPI)"},
  };
  for (const auto& c : cases) {
    auto w = ReadOpenMpi(Env(c.env));
    ASSERT_FALSE(w.ok()) << c.msg;
    EXPECT_EQ(w.error().message, c.msg);
  }
}

TEST(Hydra, ReadsPmiVariables) {
  auto w = ReadHydra(Env({{"PMI_RANK", "3"}, {"PMI_SIZE", "4"},
                          {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}}));
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_STREQ(LauncherName((*w)->source), "MPICH/Intel MPI (Hydra)");
  EXPECT_EQ((*w)->rank->value, 3);
  EXPECT_EQ((*w)->local_size->value, 2);
}

TEST(Hydra, PmiPortModeIsAClearError) {
  auto w = ReadHydra(Env({{"PMI_PORT", "node1:33445"}, {"PMI_ID", "3"}}));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("PMI_PORT='node1:33445' and PMI_ID='3' are set "
                                   "but PMI_RANK is not: Hydra's -pmi-port mode"),
            std::string::npos)
      << w.error().message;
}

TEST(Mvapich, ReadsMv2Variables) {
  auto w = ReadMvapich(Env({{"MV2_COMM_WORLD_RANK", "0"}, {"MV2_COMM_WORLD_SIZE", "2"},
                            {"MV2_COMM_WORLD_LOCAL_RANK", "0"},
                            {"MV2_COMM_WORLD_LOCAL_SIZE", "1"}}));
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_STREQ(LauncherName((*w)->source), "MVAPICH2");
  EXPECT_EQ((*w)->size->value, 2);
}

TEST(Pmix, RankOnly) {
  auto w = ReadPmix(Env({{"PMIX_RANK", "2"}, {"PMIX_NAMESPACE", "prterun-x-1@1"}}));
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_EQ((*w)->rank->value, 2);
  EXPECT_FALSE((*w)->size);
  auto bad = ReadPmix(Env({{"PMIX_RANK", "two"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "PMIX_RANK='two' is not an integer");
}

TEST(Slurm, PrefersStepVariablesAndHandlesUnevenTasks) {
  auto w = ReadSlurm(Env({{"SLURM_PROCID", "4"},
                          {"SLURM_NTASKS", "99"},
                          {"SLURM_STEP_NUM_TASKS", "5"},
                          {"SLURM_LOCALID", "1"},
                          {"SLURM_NODEID", "1"},
                          {"SLURM_STEP_NUM_NODES", "2"},
                          {"SLURM_STEP_NODELIST", "gpu[001-002]"},
                          {"SLURM_JOB_NODELIST", "gpu[001-009]"},
                          {"SLURM_STEP_TASKS_PER_NODE", "3,2"},
                          {"SLURM_TASKS_PER_NODE", "9(x9)"}}));
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(*w);
  const SourceWorld& s = **w;
  EXPECT_EQ(s.rank->value, 4);
  EXPECT_EQ(s.size->value, 5);
  EXPECT_EQ(s.size->why, "SLURM_STEP_NUM_TASKS=5");
  EXPECT_EQ(s.local_rank->value, 1);
  EXPECT_EQ(s.local_size->value, 2);
  EXPECT_EQ(s.node_rank->value, 1);
  EXPECT_EQ(s.node_count->value, 2);
  EXPECT_EQ(s.hosts->value, (std::vector<std::string>{"gpu001", "gpu002"}));
}

// The step's list and count must agree, and the count bounds the list's
// expansion: a million names are refused before they are built (before, 100
// MB and 1.5 s, and never compared).
TEST(Slurm, AStepListThatDisagreesWithTheStepCountIsRefused) {
  auto base = [](const std::string& list) {
    return ReadSlurm(Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                          {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "0"},
                          {"SLURM_STEP_NUM_NODES", "2"}, {"SLURM_STEP_NODELIST", list}}));
  };
  auto huge = base("n[0-1048575]");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().message,
            "SLURM_STEP_NODELIST='n[0-1048575]' names more than 2 host(s), but "
            "SLURM_STEP_NUM_NODES=2");
  auto one = base("n1");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().message,
            "SLURM_STEP_NODELIST='n1' names 1 host(s), but SLURM_STEP_NUM_NODES=2");
  EXPECT_TRUE(base("n[1-2]").ok());
}

TEST(Slurm, FallsBackToJobVariables) {
  auto w = ReadSlurm(Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                          {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "0"},
                          {"SLURM_NNODES", "2"}, {"SLURM_JOB_NODELIST", "a,b"},
                          {"SLURM_TASKS_PER_NODE", "1(x2)"}}));
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_EQ((*w)->local_size->value, 1);
  EXPECT_EQ((*w)->hosts->value.front(), "a");
}

TEST(Slurm, Errors) {
  auto no_size = ReadSlurm(Env({{"SLURM_PROCID", "0"}}));
  ASSERT_FALSE(no_size.ok());
  EXPECT_EQ(no_size.error().message,
            "SLURM_PROCID='0' is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is");
  auto bad_list = ReadSlurm(Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                 {"SLURM_STEP_NODELIST", "n[1-"}}));
  ASSERT_FALSE(bad_list.ok());
  EXPECT_EQ(bad_list.error().message,
            "SLURM_STEP_NODELIST='n[1-' has '[' without a closing ']'");
  auto empty_list = ReadSlurm(Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                   {"SLURM_STEP_NODELIST", ""}}));
  ASSERT_FALSE(empty_list.ok());
  EXPECT_EQ(empty_list.error().message, "SLURM_STEP_NODELIST='' is an empty host list");
  auto short_tpn = ReadSlurm(Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                  {"SLURM_NODEID", "2"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}}));
  ASSERT_FALSE(short_tpn.ok());
  EXPECT_EQ(short_tpn.error().message,
            "SLURM_STEP_TASKS_PER_NODE='1(x2)' has no entry for SLURM_NODEID=2");
}

TEST(TorchEnv, ReadsPresetWithoutLocalSize) {
  auto w = ReadTorchEnv(Env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"},
                             {"NODE_RANK", "1"}}));
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_EQ((*w)->rank->value, 1);
  EXPECT_EQ((*w)->local_rank->value, 0);
  EXPECT_FALSE((*w)->local_size);
  EXPECT_EQ((*w)->node_rank->value, 1);
  auto bad = ReadTorchEnv(Env({{"RANK", "2"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "RANK=2 is not below WORLD_SIZE=2");
}

// torchrun exports the node count; a rank on node 0 knows the job spans more.
TEST(TorchEnv, GroupWorldSizeIsTheNodeCount) {
  auto w = ReadTorchEnv(Env({{"RANK", "0"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "0"},
                             {"LOCAL_WORLD_SIZE", "8"}, {"GROUP_RANK", "0"},
                             {"GROUP_WORLD_SIZE", "2"}}));
  ASSERT_TRUE(w.ok() && *w);
  EXPECT_EQ((*w)->node_count->value, 2);
  auto bad = ReadTorchEnv(Env({{"RANK", "0"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "0"},
                               {"GROUP_RANK", "2"}, {"GROUP_WORLD_SIZE", "2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "GROUP_RANK=2 is not below GROUP_WORLD_SIZE=2");
}

TEST(JobId, Precedence) {
  EXPECT_EQ(ReadJobId(Env({{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "3"},
                           {"OMPI_MCA_ess_base_jobid", "99"}}))->value, "77.3");
  EXPECT_EQ(ReadJobId(Env({{"OMPI_MCA_ess_base_jobid", "99"},
                           {"PMIX_NAMESPACE", "ns"}}))->value, "99");
  EXPECT_EQ(ReadJobId(Env({{"PMIX_NAMESPACE", "ns"}}))->value, "ns");
  EXPECT_FALSE(ReadJobId(Env({})));
}

// Kubeflow's pods: TrainJob's and PyTorchJob's (1.7 and later) PET_*.
TEST(Kubeflow, ReadsTheNodeFromTorchrunsDefaults) {
  auto w = ReadKubeflow(Env({{"PET_NNODES", "4"}, {"PET_NODE_RANK", "2"},
                             {"PET_NPROC_PER_NODE", "8"}}));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(*w);
  EXPECT_EQ((*w)->source, Launcher::kKubeflow);
  EXPECT_EQ((*w)->rank->value, 2);
  EXPECT_EQ((*w)->size->value, 4);
  EXPECT_EQ((*w)->local_size->value, 1);
  EXPECT_EQ((*w)->node_rank->value, 2);
  EXPECT_EQ((*w)->node_count->value, 4);
  EXPECT_FALSE(*ReadKubeflow(Env({{"PET_NPROC_PER_NODE", "8"}})));
}

TEST(Kubeflow, AnElasticRangeOrABadNumberIsAClearError) {
  auto elastic = ReadKubeflow(Env({{"PET_NNODES", "1:3"}, {"PET_NODE_RANK", "0"}}));
  ASSERT_FALSE(elastic.ok());
  EXPECT_NE(elastic.error().message.find("PET_NNODES='1:3' is an elastic range"),
            std::string::npos);
  auto bad = ReadKubeflow(Env({{"PET_NNODES", "2"}, {"PET_NODE_RANK", "2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("PET_NODE_RANK=2"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace aml
