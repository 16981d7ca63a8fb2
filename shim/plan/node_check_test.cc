// The node's check before another attempt (node_check.h).
#include "shim/plan/node_check.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

FabricReport Fabric(const std::string& state, bool roce = true) {
  FabricReport f;
  IbDevice d;
  d.name = "mlx5_0";
  IbPort p;
  p.port = 1;
  p.state = state;
  p.link_layer = "Ethernet";
  if (roce) p.roce_v2_ipv4_gid_index = 3;
  d.ports.push_back(p);
  IbPort unused;  // never usable: not part of the baseline
  unused.port = 2;
  unused.state = "DOWN";
  unused.link_layer = "InfiniBand";
  d.ports.push_back(unused);
  f.devices.push_back(d);
  return f;
}

TEST(NodeCheck, AFitNodePasses) {
  const NodeBaseline b = TakeBaseline(8, Fabric("ACTIVE"));
  EXPECT_EQ(b.ports, (std::vector<std::string>{"mlx5_0 port 1"}));
  EXPECT_EQ(CheckNode(b, 8, Fabric("ACTIVE")), "");
  EXPECT_EQ(CheckNode(b, 9, Fabric("ACTIVE")), "");  // more is no loss
}

TEST(NodeCheck, APortDownAGpuGoneOrARoceAddressLostIsNamed) {
  const NodeBaseline b = TakeBaseline(8, Fabric("ACTIVE"));
  EXPECT_EQ(CheckNode(b, 8, Fabric("DOWN")),
            "mlx5_0 port 1 is DOWN (usable as the job started)");
  EXPECT_EQ(CheckNode(b, 7, Fabric("ACTIVE")),
            "1 of its 8 GPUs gone from /proc/driver/nvidia/gpus (usable as the job started)");
  EXPECT_EQ(CheckNode(b, 8, Fabric("ACTIVE", false)),
            "mlx5_0 port 1 has no RoCE v2 IPv4 address (usable as the job started)");
  EXPECT_EQ(CheckNode(b, 8, FabricReport{}), "mlx5_0 port 1 is gone (usable as the job started)");
  EXPECT_EQ(CheckNode(b, 6, Fabric("INIT")),
            "2 of its 8 GPUs gone from /proc/driver/nvidia/gpus; mlx5_0 port 1 is INIT (usable "
            "as the job started)");
}

TEST(NodeCheck, ANodeWithoutGpusOrFabricHasNothingToLose) {
  const NodeBaseline b = TakeBaseline(0, FabricReport{});
  EXPECT_EQ(CheckNode(b, 0, FabricReport{}), "");
}

}  // namespace
}  // namespace aml
