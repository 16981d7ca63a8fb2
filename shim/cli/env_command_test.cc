#include "shim/cli/env_command.h"

#include <gtest/gtest.h>

#include "shim/plan/contract.h"

namespace aml {
namespace {

World MakeWorld(int rank, int size, int lrank, int lsize, int node, int nodes) {
  World w;
  w.source = Launcher::kOpenMpi;
  w.rank = {rank, "r"};
  w.size = {size, "s"};
  w.local_rank = {lrank, "lr"};
  w.local_size = {lsize, "ls"};
  w.node_rank = {node, "n"};
  w.node_count = {nodes, "nc"};
  w.single_node = nodes == 1;
  w.master_addr = {"10.1.1.1", "a"};
  w.master_port = {1234, "p"};
  return w;
}

TEST(EnvCommand, ShellQuote) {
  EXPECT_EQ(ShellQuote("abc"), "abc");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(EnvCommand, FormatsExportJsonExplain) {
  World w = MakeWorld(1, 2, 1, 2, 0, 1);
  ChildPlan plan;
  plan.rank = 1;
  plan.vars = BuildContract(w, EnvSnapshot(), {});
  plan.argv = {"true"};
  Options o;
  std::string exports = FormatEnv(w, {plan}, o);
  EXPECT_NE(exports.find("export RANK=1\n"), std::string::npos);
  o.json = true;
  std::string json = FormatEnv(w, {plan}, o);
  EXPECT_NE(json.find("\"env\":{\"RANK\":\"1\""), std::string::npos) << json;
  o.json = false;
  o.explain = true;
  std::string explain = FormatEnv(w, {plan}, o);
  EXPECT_NE(explain.find("RANK=1"), std::string::npos);
  EXPECT_NE(explain.find("<- r"), std::string::npos);
}

}  // namespace
}  // namespace aml
