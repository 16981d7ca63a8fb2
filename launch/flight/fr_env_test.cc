#include "launch/flight/fr_env.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace aml {
namespace {

const EnvVar* Find(const std::vector<EnvVar>& vars, const std::string& name) {
  for (const EnvVar& v : vars)
    if (v.name == name) return &v;
  return nullptr;
}

TEST(FlightEnv, EveryVariableInAPrivateDirectoryOfTheAttempt) {
  EnvSnapshot env;
  ContractBuilder b(env);
  AddFlightVars(env, "/dev/shm/p", 2, &b);
  const auto& v = b.vars();
  ASSERT_TRUE(Find(v, "TORCH_FR_BUFFER_SIZE"));
  EXPECT_EQ(Find(v, "TORCH_FR_BUFFER_SIZE")->value, "2000");
  // torch 2.9's names only: it warns of the old ones (the agent sets them
  // for an older torch).
  EXPECT_EQ(Find(v, "TORCH_NCCL_TRACE_BUFFER_SIZE"), nullptr);
  EXPECT_EQ(Find(v, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"), nullptr);
  EXPECT_EQ(Find(v, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE")->value, "/dev/shm/p/fr-2/pipe-rank-");
  EXPECT_EQ(Find(v, "TORCH_FR_DUMP_TEMP_FILE")->value, "/dev/shm/p/fr-2/dump-rank-");
  EXPECT_EQ(Find(v, "PYTHONPATH")->value, "/dev/shm/p/python");
}

TEST(FlightEnv, WhatTheUserSetStandsAndIsSaid) {
  EnvSnapshot env({{"TORCH_NCCL_TRACE_BUFFER_SIZE", "0"},
                   {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/mine/pipe_"},
                   {"PYTHONPATH", "/opt/lib"}});
  ContractBuilder b(env);
  AddFlightVars(env, "/p", 0, &b);
  const auto& v = b.vars();
  // Their buffer of 0 (the recorder off) decides: the newer name is not set over it.
  EXPECT_EQ(Find(v, "TORCH_FR_BUFFER_SIZE"), nullptr);
  ASSERT_TRUE(Find(v, "TORCH_NCCL_TRACE_BUFFER_SIZE"));
  EXPECT_TRUE(Find(v, "TORCH_NCCL_TRACE_BUFFER_SIZE")->user_kept);
  EXPECT_EQ(Find(v, "TORCH_NCCL_TRACE_BUFFER_SIZE")->value, "0");
  EXPECT_NE(Find(v, "TORCH_NCCL_TRACE_BUFFER_SIZE")->why.find("set by the user"), std::string::npos);
  EXPECT_EQ(Find(v, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE")->value, "/mine/pipe_");
  EXPECT_EQ(Find(v, "PYTHONPATH")->value, "/p/python:/opt/lib");
  EXPECT_NE(Find(v, "PYTHONPATH")->why.find("your PYTHONPATH follows"), std::string::npos);
}

TEST(FlightEnv, TheRanksFilesFollowItsEnvironment) {
  EnvSnapshot base(std::map<std::string, std::string>{{"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/a/p-"}});
  auto f = FlightFilesOf(base, EnvSets{}, 3);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->pipe, "/a/p-3.pipe");
  EXPECT_EQ(f->dump, "/tmp/nccl_trace_rank_3") << "torch's own default";
  f = FlightFilesOf(base, {{"TORCH_FR_DUMP_TEMP_FILE", "/b/d-"}}, 3);
  EXPECT_EQ(f->dump, "/b/d-3");
  EXPECT_EQ(f->why, "/b/d-3.why");
  EXPECT_EQ(f->more, "/b/d-3.more");
  EXPECT_EQ(f->light, "/b/d-3.light");
  EXPECT_EQ(f->exit, "/b/d-3.exit");
  EXPECT_FALSE(FlightFilesOf(EnvSnapshot{}, EnvSets{}, 0)) << "no pipe named: the recorder is off";
  EXPECT_FALSE(FlightFilesOf(base, {{"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", EnvRemoved()}}, 0));
}

TEST(FlightEnv, TheAgentIsWrittenPrivatelyAndOnce) {
  char tmpl[] = "/tmp/aml-fr-env-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const std::string dir = tmpl;
  ASSERT_TRUE(MakeFlightAgent(dir).ok());
  struct stat st {};
  ASSERT_EQ(lstat((dir + "/python").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(lstat((dir + "/python/sitecustomize.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(dir + "/python/sitecustomize.py");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().rfind("# aml-shim's flight-recorder agent", 0), 0u);
  EXPECT_NE(text.str().find("_aml_flight_chain()\n"), std::string::npos) << "the whole file";
  auto again = MakeFlightAgent(dir);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find(dir + "/python"), std::string::npos);
  // An attempt's directory: made once, never through a planted link.
  ASSERT_TRUE(MakeFlightAttemptDir(dir, 0).ok());
  ASSERT_EQ(symlink("/tmp", (dir + "/fr-1").c_str()), 0);
  EXPECT_FALSE(MakeFlightAttemptDir(dir, 1).ok());
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace aml
