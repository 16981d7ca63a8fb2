#include "shim/topology/gpu_count.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

namespace aml {
namespace {

TEST(GpuCount, CudaVisibleDevices) {
  EXPECT_EQ(CountCudaVisibleDevices("0,1,2,3"), 4);
  EXPECT_EQ(CountCudaVisibleDevices("2"), 1);
  EXPECT_EQ(CountCudaVisibleDevices(""), 0);
  EXPECT_EQ(CountCudaVisibleDevices("-1"), 0);
  EXPECT_EQ(CountCudaVisibleDevices("0,1,-1,3"), 2);  // CUDA stops at -1
  EXPECT_EQ(CountCudaVisibleDevices("GPU-8f2e1a,MIG-1234"), 2);
  EXPECT_EQ(CountCudaVisibleDevices("NoDevFiles"), 0);
}

TEST(GpuCount, ProcDriverDirectory) {
  char tmpl[] = "/tmp/aml-gpus-XXXXXX";
  std::string root = mkdtemp(tmpl);
  std::string gpus = root + "/driver/nvidia/gpus";
  ASSERT_EQ(system(("mkdir -p " + gpus + "/0000:07:00.0 " + gpus + "/0000:0f:00.0").c_str()), 0);
  GpuCount c = CountVisibleGpus(EnvSnapshot(), root);
  EXPECT_EQ(c.count, 2);
  EXPECT_EQ(CountVisibleGpus(EnvSnapshot(std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "1"}}), root).count, 1);
  EXPECT_EQ(CountVisibleGpus(EnvSnapshot(), root + "/none").count, 0);
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
}

}  // namespace
}  // namespace aml
