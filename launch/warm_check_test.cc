#include "launch/warm_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

namespace aml {
namespace {

EnvSnapshot Env() {
  return EnvSnapshot(std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}});
}

TEST(CheckWarmPreload, ModulesTheInterpreterFindsPass) {
  Status st = CheckWarmPreload({"/usr/bin/python3", "-u", "train.py"}, Env(), "os,json.decoder");
  EXPECT_TRUE(st.ok()) << st.error().message;
}

TEST(CheckWarmPreload, AModuleItCannotFindIsNamedWithTheInterpreter) {
  Status st = CheckWarmPreload({"/usr/bin/python3", "train.py"}, Env(),
                               "os,aml_no_such_module.sub,json");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "--preload=os,aml_no_such_module.sub,json: /usr/bin/python3 finds no module "
            "aml_no_such_module.sub (in the rank's environment): a standby could not import it");
}

TEST(CheckWarmPreload, AnInterpreterThatCannotStartOrNeverAnswersIsAnError) {
  Status st = CheckWarmPreload({"/nonexistent/python3", "train.py"}, Env(), "os");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("cannot start its standby"), std::string::npos)
      << st.error().message;
  char dir[] = "/tmp/aml-warm-check-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string py = std::string(dir) + "/python3";
  std::ofstream(py) << "#!/bin/sh\nexec sleep 60\n";
  chmod(py.c_str(), 0700);
  st = CheckWarmPreload({py, "train.py"}, Env(), "os", 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "--warm-restart: " + py +
                                    " did not say within 1 s whether it finds --preload's "
                                    "modules (os)");
  unlink(py.c_str());
  rmdir(dir);
}

TEST(CheckWarmPreload, ACommandThatIsNotPythonIsNotChecked) {
  EXPECT_TRUE(CheckWarmPreload({"/bin/sh", "-c", "exit 7"}, Env(), "aml_no_such_module").ok());
}

}  // namespace
}  // namespace aml
