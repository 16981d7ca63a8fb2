#include "shim/topology/gpu_topology.h"

#include <gtest/gtest.h>

#include "shim/topology/cpu_list.h"

namespace aml {
namespace {

std::string Root(const std::string& name) { return std::string(AML_FIXTURES_DIR) + "/gpu/" + name; }

GpuTopology Dgx(EnvSnapshot env = {}) {
  return ReadGpuTopology(env, Root("dgx8") + "/proc", Root("dgx8") + "/sys");
}

TEST(CpuList, ParsesRangesAndFormatsBack) {
  auto c = ParseCpuList("local_cpulist", "0-2,8,5-6\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<int>{0, 1, 2, 5, 6, 8}));
  EXPECT_EQ(FormatCpuList(*c), "0-2,5-6,8");
  EXPECT_TRUE(ParseCpuList("x", "")->empty());
  auto bad = ParseCpuList("local_cpulist", "3-1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "local_cpulist='3-1' is not a CPU list");
  EXPECT_FALSE(ParseCpuList("x", "a").ok());
}

TEST(GpuTopology, EightGpusTwoSocketsInPciOrder) {
  GpuTopology t = Dgx();
  ASSERT_EQ(t.gpus.size(), 8u) << t.why;
  EXPECT_EQ(t.gpus[0].pci, "0000:07:00.0");
  EXPECT_EQ(t.gpus[7].pci, "0000:bd:00.0");
  EXPECT_EQ(t.gpus[3].minor, 3);
  EXPECT_EQ(t.gpus[3].numa_node, 0);
  EXPECT_EQ(t.gpus[4].numa_node, 1);
  EXPECT_EQ(FormatCpuList(t.gpus[5].cpus), "48-95,144-191");
  EXPECT_EQ(t.gpus[2].uuid, "GPU-00000002-1111-2222-3333-444455550002");
}

TEST(GpuTopology, CudaVisibleDevicesSelectsAndReorders) {
  EnvSnapshot env;
  env.Set("CUDA_VISIBLE_DEVICES", "6,GPU-00000001,9,2");
  GpuTopology t = Dgx(env);
  // Index 6, the UUID prefix of GPU 1, then 9 is invalid: CUDA stops there.
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].pci, "0000:b7:00.0");
  EXPECT_EQ(t.gpus[1].pci, "0000:0f:00.0");
  // NVML's index (DCGM's GPU id): the place in PCI order among all.
  EXPECT_EQ(t.gpus[0].index, 6);
  EXPECT_EQ(t.gpus[1].index, 1);
  env.Set("CUDA_VISIBLE_DEVICES", "MIG-abc");
  t = Dgx(env);
  EXPECT_TRUE(t.gpus.empty());
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("MIG-abc is a MIG instance"), std::string::npos);
}

TEST(GpuTopology, BindingFollowsTheLocalRanksGpu) {
  GpuTopology t = Dgx();
  auto b = ChooseBinding(t, 5);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(FormatCpuList(b->cpus), "48-95,144-191");
  EXPECT_EQ(b->why, "GPU 5 (0000:90:00.0) is on NUMA node 1: CPUs 48-95,144-191");
  EXPECT_EQ(FormatCpuList(ChooseBinding(t, 0)->cpus), "0-47,96-143");

  EnvSnapshot env;
  env.Set("CUDA_VISIBLE_DEVICES", "4,0");
  auto swapped = ChooseBinding(Dgx(env), 1);
  ASSERT_TRUE(swapped.ok());
  EXPECT_EQ(FormatCpuList(swapped->cpus), "0-47,96-143");
}

TEST(GpuTopology, NoBindingWithoutGpuInformationSaysWhy) {
  GpuTopology none = ReadGpuTopology(EnvSnapshot{}, "/nonexistent", "/nonexistent");
  auto b = ChooseBinding(none, 0);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message,
            "--numa-bind: no GPU information (no /nonexistent/driver/nvidia/gpus (no NVIDIA "
            "driver)); children run unbound");
  auto past = ChooseBinding(Dgx(), 8);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("local rank 8 has no GPU of its own (8 visible"),
            std::string::npos);
  GpuTopology nonuma = ReadGpuTopology(EnvSnapshot{}, Root("nonuma") + "/proc", Root("nonuma") + "/sys");
  ASSERT_EQ(nonuma.gpus.size(), 1u);
  EXPECT_EQ(nonuma.gpus[0].numa_node, -1);
  auto nb = ChooseBinding(nonuma, 0);
  ASSERT_FALSE(nb.ok());
  EXPECT_NE(nb.error().message.find("has no local_cpulist in sysfs"), std::string::npos);
}

}  // namespace
}  // namespace aml
