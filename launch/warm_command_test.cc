#include "launch/warm_command.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

using V = std::vector<std::string>;

TEST(ParsePythonCommand, AScriptWithItsArgumentsAndTheInterpretersFlags) {
  auto c = ParsePythonCommand({"/usr/bin/python3", "-u", "-X", "dev", "-Wignore", "train.py",
                               "--lr", "0.1", "-m", "x"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->module);
  EXPECT_EQ(c->target, "train.py");
  EXPECT_EQ(c->flags, (V{"-u", "-X", "dev", "-W", "ignore"}));
  EXPECT_EQ(c->args, (V{"--lr", "0.1", "-m", "x"}));
  EXPECT_EQ(c->SysArgv(), (V{"train.py", "--lr", "0.1", "-m", "x"}));
  EXPECT_EQ(c->StandbyArgv("/dev/shm/aml/standby.py"),
            (V{"/usr/bin/python3", "-u", "-X", "dev", "-W", "ignore", "/dev/shm/aml/standby.py"}));
}

TEST(ParsePythonCommand, AModuleAndAClusterOfFlags) {
  auto c = ParsePythonCommand({"python3.11", "-uBm", "pkg.train", "a"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->module);
  EXPECT_EQ(c->target, "pkg.train");
  EXPECT_EQ(c->flags, (V{"-uB"}));
  EXPECT_EQ(c->SysArgv(), (V{"-m", "a"}));
  c = ParsePythonCommand({"python", "-uX", "dev", "--", "-odd-name.py"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->flags, (V{"-uX", "dev"}));
  EXPECT_EQ(c->target, "-odd-name.py");
}

TEST(ParsePythonCommand, WhatStartsColdSaysWhy) {
  auto why = [](V argv) {
    auto c = ParsePythonCommand(argv);
    return c.ok() ? std::string("ok") : c.error().message;
  };
  EXPECT_EQ(why({"bash", "run.sh"}), "not a Python interpreter: bash");
  EXPECT_EQ(why({"pythonista", "x.py"}), "not a Python interpreter: pythonista");
  EXPECT_EQ(why({"python3", "-c", "print(1)"}), "-c runs a string, not a script: cold");
  EXPECT_EQ(why({"python3", "-uc", "print(1)"}), "-c runs a string, not a script: cold");
  EXPECT_EQ(why({"python3", "-i", "x.py"}),
            "interpreter option -i is not one a standby takes: cold");
  EXPECT_EQ(why({"python3", "--check-hash-based-pycs", "always", "x.py"}),
            "interpreter option --check-hash-based-pycs is not one a standby takes: cold");
  EXPECT_EQ(why({"python3"}), "no script (the interactive interpreter): cold");
  EXPECT_EQ(why({"python3", "-"}), "the script is read from stdin: cold");
  EXPECT_EQ(why({"python3", "-X"}), "interpreter option -X has no argument");
  EXPECT_EQ(why({"/opt/conda/bin/python3.10", "x.py"}), "ok");
}

}  // namespace
}  // namespace aml
