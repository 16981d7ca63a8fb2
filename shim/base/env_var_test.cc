#include "shim/base/env_var.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace aml {
namespace {

TEST(ContractSets, AUserKeptValueSetsNothing) {
  EnvSnapshot env(std::map<std::string, std::string>{{"MASTER_PORT", "1234"}});
  ContractBuilder b(env);
  b.Force("RANK", "3", "the world");
  b.Default("MASTER_PORT", "29500", "the launcher's");
  b.Default("OMP_NUM_THREADS", "1", "several per node");
  EXPECT_EQ(ContractSets(b.vars()),
            (EnvSets{{"RANK", "3"}, {"OMP_NUM_THREADS", "1"}}));
}

TEST(ContractSets, ApplyContractIsTheSetsOverTheEnvironment) {
  EnvSnapshot env(std::map<std::string, std::string>{{"HOME", "/root"}, {"RANK", "user"}});
  ContractBuilder b(env);
  b.Force("RANK", "0", "the world");
  b.Default("HOME", "/elsewhere", "never");
  const EnvSnapshot applied = ApplyContract(env, b.vars());
  EXPECT_EQ(applied.vars(), (std::map<std::string, std::string, std::less<>>{
                                {"HOME", "/root"}, {"RANK", "0"}}));
}

}  // namespace
}  // namespace aml
