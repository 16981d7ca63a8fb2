#include "ib/probe.h"

#include <gtest/gtest.h>

#include "ib/fabric_env.h"
#include "ib/report.h"

namespace aml {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(AML_FIXTURES_DIR) + "/sysfs/" + name;
}

std::map<std::string, std::string> EnvOf(const FabricPlan& plan) {
  std::map<std::string, std::string> m;
  for (const auto& v : plan.vars) m[v.name] = v.value;
  return m;
}

FabricPlan Plan(const std::string& fixture, EnvSnapshot env = {}, NcclConf conf = {},
                std::optional<int> numa = std::nullopt) {
  return PlanFabric(ProbeSysfs(Fixture(fixture)), env, conf, numa);
}

TEST(Probe, Nd96asrV4) {
  FabricReport r = ProbeSysfs(Fixture("nd96asr_v4"));
  ASSERT_EQ(r.devices.size(), 9u);
  const IbDevice& an = r.devices[0];
  EXPECT_EQ(an.name, "mlx5_an0");
  EXPECT_EQ(an.ports[0].link_layer, "Ethernet");
  EXPECT_FALSE(an.ports[0].usable());
  const IbDevice& ib0 = r.devices[1];
  EXPECT_EQ(ib0.name, "mlx5_ib0");
  EXPECT_EQ(ib0.pci, "0101:00:00.0");
  EXPECT_EQ(ib0.vendor, "0x15b3");
  EXPECT_EQ(ib0.device, "0x101c");
  EXPECT_TRUE(ib0.vf);
  EXPECT_NE(ib0.vf_why.find("Mellanox VF device id 0x101c"), std::string::npos);
  EXPECT_EQ(ib0.numa_node, 0);
  EXPECT_EQ(ib0.netdevs, std::vector<std::string>{"ib0"});
  ASSERT_EQ(ib0.ports.size(), 1u);
  EXPECT_EQ(ib0.ports[0].state, "ACTIVE");
  EXPECT_EQ(ib0.ports[0].phys_state, "LinkUp");
  EXPECT_DOUBLE_EQ(ib0.ports[0].rate_gbps, 200);
  EXPECT_EQ(ib0.ports[0].lid, "0x100");

  FabricPlan plan = PlanFabric(r, EnvSnapshot(), NcclConf());
  auto env = EnvOf(plan);
  EXPECT_EQ(env["NCCL_IB_HCA"],
            "=mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1");
  EXPECT_EQ(env["UCX_NET_DEVICES"], "mlx5_ib0:1");
  EXPECT_EQ(env.count("NCCL_IB_GID_INDEX"), 0u);
  EXPECT_TRUE(plan.usable);
  EXPECT_EQ(plan.summary,
            "fabric: 8 InfiniBand ports active, 200 Gb/s 4X HDR, SR-IOV VF; NCCL_IB_HCA="
            "=mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,"
            "mlx5_ib7:1; excluded: mlx5_an0 (Ethernet, no RoCE v2 IPv4 GID)");
}

TEST(Probe, NearestPortToTheGpu) {
  auto env = EnvOf(Plan("nd96asr_v4", {}, {}, 1));
  EXPECT_EQ(env["UCX_NET_DEVICES"], "mlx5_ib4:1");
}

TEST(Probe, NdH100V5) {
  FabricPlan plan = Plan("nd_h100_v5");
  EXPECT_EQ(EnvOf(plan)["NCCL_IB_HCA"].substr(0, 24), "=mlx5_ib0:1,mlx5_ib1:1,m");
  EXPECT_NE(plan.summary.find("8 InfiniBand ports active, 400 Gb/s 4X NDR, SR-IOV VF"),
            std::string::npos);
}

TEST(Probe, BareMetalPfVfAndPortDown) {
  FabricReport r = ProbeSysfs(Fixture("baremetal_sriov"));
  ASSERT_EQ(r.devices.size(), 3u);
  EXPECT_FALSE(r.devices[0].vf);
  EXPECT_EQ(r.devices[0].sriov_totalvfs, 8);
  EXPECT_EQ(r.devices[0].pci, "0000:05:00.0");
  EXPECT_EQ(r.devices[1].ports[0].state, "DOWN");
  EXPECT_EQ(r.devices[1].ports[0].phys_state, "Disabled");
  EXPECT_TRUE(r.devices[2].vf);
  EXPECT_EQ(r.devices[2].vf_why, "device/physfn -> 0000:05:00.0");
  FabricPlan plan = PlanFabric(r, {}, {});
  EXPECT_EQ(EnvOf(plan)["NCCL_IB_HCA"], "=mlx5_0:1,mlx5_2:1");
  EXPECT_NE(plan.summary.find("excluded: mlx5_1:1 (DOWN)"), std::string::npos) << plan.summary;
}

TEST(Probe, RoceOnlyPicksTheRoceV2Ipv4Gid) {
  FabricReport r = ProbeSysfs(Fixture("roce_only"));
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].ports[0].roce_v2_ipv4_gid_index, 3);
  EXPECT_EQ(r.devices[0].ports[0].roce_ipv4, "198.18.5.1");
  FabricPlan plan = PlanFabric(r, {}, {});
  auto env = EnvOf(plan);
  EXPECT_EQ(env["NCCL_IB_HCA"], "=mlx5_0:1");
  EXPECT_EQ(env["NCCL_IB_GID_INDEX"], "3");
  EXPECT_EQ(env["UCX_NET_DEVICES"], "mlx5_0:1");
  EXPECT_NE(plan.summary.find("1 RoCE port active, 100 Gb/s 4X EDR"), std::string::npos);
}

TEST(Probe, EthernetOnlyFallsBackToTcp) {
  FabricPlan plan = Plan("ethernet_only");
  EXPECT_FALSE(plan.usable);
  EXPECT_TRUE(plan.vars.empty());
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_EQ(plan.warnings[0],
            "no active InfiniBand/RoCE port: NCCL will use TCP sockets "
            "(mlx5_an0 (Ethernet, no RoCE v2 IPv4 GID))");
}

TEST(Probe, EmptyNode) {
  FabricReport r = ProbeSysfs(Fixture("empty"));
  EXPECT_TRUE(r.devices.empty());
  FabricPlan plan = PlanFabric(r, {}, {});
  EXPECT_FALSE(plan.usable);
  EXPECT_TRUE(plan.warnings.empty());
  EXPECT_NE(plan.summary.find("no RDMA devices"), std::string::npos);
  EXPECT_NE(FormatProbeTable(r, plan).find("no RDMA devices"), std::string::npos);
}

TEST(Probe, RealSysOfThisMachineDoesNotCrash) {
  FabricReport r = ProbeSysfs("/sys");
  FabricPlan plan = PlanFabric(r, {}, {});
  EXPECT_FALSE(plan.summary.empty());
}

TEST(Probe, UserValuesAndNcclConfAreKept) {
  EnvSnapshot env(std::map<std::string, std::string>{{"NCCL_IB_HCA", "mlx5_ib3"}});
  NcclConf conf;
  conf.path = "/etc/nccl.conf";
  conf.vars["UCX_NET_DEVICES"] = "mlx5_ib7:1";
  FabricPlan plan = Plan("nd96asr_v4", env, conf);
  auto m = EnvOf(plan);
  EXPECT_EQ(m["NCCL_IB_HCA"], "mlx5_ib3");
  EXPECT_EQ(m["UCX_NET_DEVICES"], "mlx5_ib7:1");
  for (const auto& v : plan.vars) EXPECT_TRUE(v.user_kept) << v.name;
}

TEST(Probe, MissingTopoFileIsWarned) {
  NcclConf conf;
  conf.path = "/etc/nccl.conf";
  conf.vars["NCCL_TOPO_FILE"] = "/opt/microsoft/ndv4-topo.xml-missing";
  FabricPlan plan = Plan("nd96asr_v4", {}, conf);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_EQ(plan.warnings[0],
            "NCCL_TOPO_FILE='/opt/microsoft/ndv4-topo.xml-missing' (/etc/nccl.conf) does not "
            "exist: NCCL will fail or ignore it");
  EXPECT_NE(plan.summary.find("/etc/nccl.conf sets NCCL_TOPO_FILE="), std::string::npos);
}

TEST(Probe, JsonHasTheDesignKeys) {
  FabricReport r = ProbeSysfs(Fixture("nd96asr_v4"));
  std::string j = FormatProbeJson(r, PlanFabric(r, {}, {}));
  for (const char* key : {"\"devices\":[", "\"name\":\"mlx5_ib0\"", "\"pci\":\"0101:00:00.0\"",
                          "\"vendor\":\"0x15b3\"", "\"device\":\"0x101c\"", "\"vf\":true",
                          "\"numa_node\":0", "\"netdevs\":[\"ib0\"]", "\"ports\":[{\"port\":1",
                          "\"state\":\"ACTIVE\"", "\"phys_state\":\"LinkUp\"",
                          "\"link_layer\":\"InfiniBand\"", "\"rate_gbps\":200",
                          "\"rate\":\"200 Gb/sec (4X HDR)\"", "\"env\":{\"NCCL_IB_HCA\""})
    EXPECT_NE(j.find(key), std::string::npos) << key << "\n" << j;
}

}  // namespace
}  // namespace aml
