#include "shim/plan/contract.h"

#include <gtest/gtest.h>

#include <set>

#include "shim/world/world_testing.h"

namespace aml {
namespace {

std::map<std::string, std::string> AsMap(const std::vector<EnvVar>& vars) {
  std::map<std::string, std::string> m;
  for (const auto& v : vars) m[v.name] = v.value;
  return m;
}

TEST(Contract, PerProcess) {
  auto vars = AsMap(BuildContract(MakeTestWorld(5, 8, 1, 4, 1, 2), EnvSnapshot(), {}));
  EXPECT_EQ(vars["RANK"], "5");
  EXPECT_EQ(vars["WORLD_SIZE"], "8");
  EXPECT_EQ(vars["LOCAL_RANK"], "1");
  EXPECT_EQ(vars["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(vars["NODE_RANK"], "1");
  // As torchrun: the group is the node (one agent per node).
  EXPECT_EQ(vars["GROUP_RANK"], "1");
  EXPECT_EQ(vars["GROUP_WORLD_SIZE"], "2");
  EXPECT_EQ(vars["ROLE_NAME"], "default");
  EXPECT_EQ(vars["ROLE_RANK"], "5");
  EXPECT_EQ(vars["ROLE_WORLD_SIZE"], "8");
  EXPECT_EQ(vars["MASTER_ADDR"], "10.1.1.1");
  EXPECT_EQ(vars["MASTER_PORT"], "1234");
  EXPECT_EQ(vars["OMP_NUM_THREADS"], "1");
  EXPECT_EQ(vars.count("PYTHONUNBUFFERED"), 0u);
  EXPECT_EQ(vars["TORCHELASTIC_RUN_ID"], "none");
  EXPECT_EQ(vars["TORCHELASTIC_RESTART_COUNT"], "0");
  EXPECT_EQ(vars["TORCHELASTIC_MAX_RESTARTS"], "0");
  EXPECT_EQ(vars["TORCHELASTIC_USE_AGENT_STORE"], "False");
}

TEST(Contract, RunIdIsTheJobId) {
  auto vars = AsMap(BuildContract(MakeTestWorld(0, 2, 0, 2, 0, 1),
                                  EnvSnapshot({{"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "3"}}),
                                  {}));
  EXPECT_EQ(vars["TORCHELASTIC_RUN_ID"], "42.3");
}

TEST(Contract, MaxRestartsIsTorchrunsVariable) {
  ChildSlot slot;
  slot.max_restarts = 3;
  auto vars = AsMap(BuildContract(MakeTestWorld(0, 2, 0, 2, 0, 1), EnvSnapshot(), slot));
  EXPECT_EQ(vars["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(vars["TORCHELASTIC_RESTART_COUNT"], "0");  // aml-shim sets it on each restart
}

TEST(Contract, PerNodeRankMath) {
  // Shim 3 of 4, local shim 1 of 2 on its node, child 2 of 3.
  ChildSlot slot{2, 3, true};
  auto vars = AsMap(BuildContract(MakeTestWorld(3, 4, 1, 2, 1, 2), EnvSnapshot(), slot));
  EXPECT_EQ(vars["RANK"], "11");
  EXPECT_EQ(vars["WORLD_SIZE"], "12");
  EXPECT_EQ(vars["LOCAL_RANK"], "5");
  EXPECT_EQ(vars["LOCAL_WORLD_SIZE"], "6");
  EXPECT_EQ(vars["GROUP_RANK"], "1");
  EXPECT_EQ(vars["GROUP_WORLD_SIZE"], "2");
  EXPECT_EQ(vars["ROLE_RANK"], "11");
  EXPECT_EQ(vars["ROLE_WORLD_SIZE"], "12");
  EXPECT_EQ(vars["PYTHONUNBUFFERED"], "1");
}

TEST(Contract, FaultHandlerOnlyForTheHangWatchdogAndNeverOverYours) {
  const World world = MakeTestWorld(0, 2, 0, 2, 0, 1);
  EXPECT_EQ(AsMap(BuildContract(world, EnvSnapshot(), ChildSlot{0, 1, true}))
                .count("PYTHONFAULTHANDLER"),
            0u);
  EXPECT_EQ(AsMap(BuildContract(world, EnvSnapshot(), ChildSlot{0, 1, true, true}))
                ["PYTHONFAULTHANDLER"],
            "1");
  EnvSnapshot yours({{"PYTHONFAULTHANDLER", ""}, {"HOME", "/root"}});  // "": yours, off
  EXPECT_EQ(*ApplyContract(yours, BuildContract(world, yours, ChildSlot{0, 1, true, true}))
                 .Find("PYTHONFAULTHANDLER"),
            "");
}

TEST(Contract, NeverOverwritesUserTuning) {
  EnvSnapshot env({{"OMP_NUM_THREADS", "8"}, {"MASTER_PORT", "999"}, {"PYTHONUNBUFFERED", "0"}});
  auto list = BuildContract(MakeTestWorld(0, 2, 0, 2, 0, 1), env, ChildSlot{0, 1, true});
  auto vars = AsMap(list);
  EXPECT_EQ(vars["OMP_NUM_THREADS"], "8");
  EXPECT_EQ(vars["MASTER_PORT"], "999");
  EXPECT_EQ(vars["PYTHONUNBUFFERED"], "0");
  EnvSnapshot applied = ApplyContract(env, list);
  EXPECT_EQ(*applied.Find("OMP_NUM_THREADS"), "8");
  EXPECT_EQ(*applied.Find("RANK"), "0");
}

TEST(Contract, OneProcessPerNodeLeavesOmpAlone) {
  auto vars = AsMap(BuildContract(MakeTestWorld(0, 2, 0, 1, 0, 2), EnvSnapshot(), {}));
  EXPECT_EQ(vars.count("OMP_NUM_THREADS"), 0u);
}

TEST(Contract, LocalRankArg) {
  auto vars = BuildContract(MakeTestWorld(5, 8, 3, 4, 1, 2), EnvSnapshot(), {});
  EXPECT_EQ(BuildArgv({"python", "train.py", "--lr", "1"}, true, vars),
            (std::vector<std::string>{"python", "train.py", "--lr", "1", "--local_rank=3"}));
  EXPECT_EQ(BuildArgv({"python"}, false, vars), (std::vector<std::string>{"python"}));
}

// --node-launcher: the node's variables and torchrun's defaults for them,
// nothing per process, and no variable that makes its processes MPI ranks.
TEST(Contract, ANodeLauncherGetsTheNodeAndNothingOfARank) {
  const EnvSnapshot env({{"RANK", "1"}, {"LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_RANK", "1"},
                         {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_MCA_ess", "^singleton"},
                         {"OMPI_MCA_btl", "self,tcp"}, {"PMIX_RANK", "1"},
                         {"PMIX_MCA_gds", "hash"}, {"SLURM_PROCID", "1"},
                         {"SLURM_JOB_ID", "7"}});
  const std::vector<EnvVar> vars = BuildNodeContract(MakeTestWorld(1, 2, 0, 1, 1, 2), env, {});
  std::map<std::string, std::string> set;
  std::set<std::string> removed;
  for (const EnvVar& v : vars) {
    if (v.removed) removed.insert(v.name);
    else set[v.name] = v.value;
  }
  EXPECT_EQ(set["NODE_RANK"], "1");
  EXPECT_EQ(set["NNODES"], "2");
  EXPECT_EQ(set["GROUP_RANK"], "1");
  EXPECT_EQ(set["GROUP_WORLD_SIZE"], "2");
  EXPECT_EQ(set["PET_NNODES"], "2");
  EXPECT_EQ(set["PET_NODE_RANK"], "1");
  EXPECT_EQ(set["PET_MASTER_ADDR"], "10.1.1.1");
  EXPECT_EQ(set["PET_MASTER_PORT"], "1234");
  EXPECT_EQ(set["MASTER_ADDR"], "10.1.1.1");
  for (const char* name : {"WORLD_SIZE", "TORCHELASTIC_RUN_ID", "ROLE_RANK"})
    EXPECT_EQ(set.count(name), 0u) << name;
  EXPECT_EQ(removed, (std::set<std::string>{"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                             "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess",
                                             "PMIX_RANK", "SLURM_PROCID"}));
  // The user's own settings stay (Open MPI's btl, PMIx's gds, the job id).
  EXPECT_EQ(ApplyContract(env, vars).GetOr("OMPI_MCA_btl", ""), "self,tcp");
  EXPECT_FALSE(ApplyContract(env, vars).Has("RANK"));
}

// srun -n1 aml-shim --nproc-per-node 2: each child as srun would number it.
TEST(Contract, SlurmsPerTaskVariablesDescribeEachChild) {
  const EnvSnapshot env({{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "2"},
                         {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
                         {"SLURM_GTIDS", "1"}, {"SLURM_NODEID", "1"}});
  auto vars = AsMap(SlurmTaskVars(MakeTestWorld(1, 2, 0, 1, 1, 2), env, ChildSlot{1, 2}));
  EXPECT_EQ(vars["SLURM_PROCID"], "3");
  EXPECT_EQ(vars["SLURM_LOCALID"], "1");
  EXPECT_EQ(vars["SLURM_NTASKS"], "4");
  EXPECT_EQ(vars["SLURM_STEP_NUM_TASKS"], "4");
  EXPECT_EQ(vars["SLURM_STEP_TASKS_PER_NODE"], "2(x2)");
  EXPECT_EQ(vars["SLURM_GTIDS"], "2,3");
  EXPECT_EQ(vars.count("SLURM_NODEID"), 0u);  // the node's, unchanged
  // One child, or no Slurm: nothing to change.
  EXPECT_TRUE(SlurmTaskVars(MakeTestWorld(1, 2, 0, 1, 1, 2), env, ChildSlot{0, 1}).empty());
  EXPECT_TRUE(SlurmTaskVars(MakeTestWorld(1, 2, 0, 1, 1, 2), EnvSnapshot(), ChildSlot{1, 2}).empty());
}

TEST(Contract, SlurmsCompressedTasksPerNodeScale) {
  EXPECT_EQ(ScaleTasksPerNode("2(x3),1", 4), "8(x3),4");
  EXPECT_EQ(ScaleTasksPerNode("1", 2), "2");
  EXPECT_EQ(ScaleTasksPerNode("weird", 2), "weird");
}

}  // namespace
}  // namespace aml
