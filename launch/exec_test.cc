#include "launch/exec.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace aml {
namespace {

std::vector<std::string> Strings(CArgs& args) {
  std::vector<std::string> out;
  for (char* const* p = args.data(); *p; ++p) out.emplace_back(*p);
  return out;
}

TEST(CArgs, KeepsEachStringAndEndsWithNull) {
  CArgs args(std::vector<std::string>{"python", "", "train.py", "--lr=0.1"});
  EXPECT_EQ(Strings(args), (std::vector<std::string>{"python", "", "train.py", "--lr=0.1"}));
  EXPECT_STREQ(args.first(), "python");
}

TEST(CArgs, EnvironmentInNameOrderWithSetsApplied) {
  EnvSnapshot env(std::map<std::string, std::string>{
      {"HOME", "/root"}, {"PATH", "/bin"}, {"RANK", "user"}, {"EMPTY", ""}});
  CArgs envp(env, {{"RANK", "3"}, {"A_FIRST", "1"}, {"ZZ_LAST", "z"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(Strings(envp), (std::vector<std::string>{"A_FIRST=1", "EMPTY=", "HOME=/root",
                                                     "MASTER_PORT=29500", "PATH=/bin", "RANK=3",
                                                     "ZZ_LAST=z"}));
}

TEST(CArgs, TheLastSetOfANameWins) {
  EnvSnapshot env(std::map<std::string, std::string>{{"MASTER_PORT", "1"}});
  CArgs envp(env, {{"MASTER_PORT", "2"}, {"X", "a"}, {"MASTER_PORT", "3"}, {"X", "b"}});
  EXPECT_EQ(Strings(envp), (std::vector<std::string>{"MASTER_PORT=3", "X=b"}));
}

TEST(CArgs, ASetToRemovedTakesTheNameAway) {
  EnvSnapshot env(std::map<std::string, std::string>{
      {"OMPI_COMM_WORLD_RANK", "1"}, {"PATH", "/bin"}, {"RANK", "1"}});
  CArgs envp(env, {{"RANK", EnvRemoved()}, {"OMPI_COMM_WORLD_RANK", EnvRemoved()},
                   {"NODE_RANK", "1"}, {"NOT_THERE", EnvRemoved()}});
  EXPECT_EQ(Strings(envp), (std::vector<std::string>{"NODE_RANK=1", "PATH=/bin"}));
}

TEST(CArgs, NoSetsIsTheEnvironment) {
  EnvSnapshot env(std::map<std::string, std::string>{{"B", "2"}, {"A", "1=1"}});
  CArgs envp(env, {});
  EXPECT_EQ(Strings(envp), (std::vector<std::string>{"A=1=1", "B=2"}));
  CArgs none(EnvSnapshot{}, {});
  EXPECT_TRUE(Strings(none).empty());
}

}  // namespace
}  // namespace aml
