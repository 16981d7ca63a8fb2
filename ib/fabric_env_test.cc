#include "ib/fabric_env.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace aml {
namespace {

TEST(NcclConf, ParsesLikeNccl) {
  std::string path = testing::TempDir() + "/nccl.conf";
  {
    std::ofstream f(path);
    f << "# comment\nNCCL_DEBUG=WARN\n  NCCL_TOPO_FILE = /opt/topo.xml\n\nbroken line\n";
  }
  NcclConf conf = ReadNcclConf(EnvSnapshot(), path);
  EXPECT_EQ(conf.path, path);
  EXPECT_EQ(conf.vars.size(), 2u);
  EXPECT_EQ(conf.vars["NCCL_DEBUG"], "WARN");
  EXPECT_EQ(conf.vars["NCCL_TOPO_FILE"], " /opt/topo.xml");
  // NCCL_CONF_FILE points elsewhere.
  NcclConf none = ReadNcclConf(
      EnvSnapshot(std::map<std::string, std::string>{{"NCCL_CONF_FILE", path + ".absent"}}), path);
  EXPECT_TRUE(none.path.empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace aml
