#include "shim/cli/env_command.h"

#include <gtest/gtest.h>

#include "shim/world/world_testing.h"

#include "shim/plan/contract.h"

namespace aml {
namespace {

TEST(EnvCommand, ShellQuote) {
  EXPECT_EQ(ShellQuote("abc"), "abc");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(EnvCommand, FormatsExportJsonExplain) {
  World w = MakeTestWorld(1, 2, 1, 2, 0, 1);
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

TEST(EnvCommand, ExplainNeverPrintsAValuesEscapeSequences) {
  World w = MakeTestWorld(0, 1, 0, 1, 0, 1);
  ChildPlan plan;
  plan.vars = {EnvVar{"MY_VAR", "a\x1b]0;pwned\x07b", "from \x1b[2Jthe user"}};
  Options o;
  o.explain = true;
  std::string explain = FormatEnv(w, {plan}, o);
  EXPECT_EQ(explain.find('\x1b'), std::string::npos) << explain;
  EXPECT_EQ(explain.find('\x07'), std::string::npos) << explain;
  EXPECT_NE(explain.find("MY_VAR=a"), std::string::npos) << explain;
}

}  // namespace
}  // namespace aml
