#include "shim/plan/socket_iface.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

NetAddr Addr(const std::string& ifname, const std::string& addr, bool loopback = false) {
  NetAddr a;
  a.ifname = ifname;
  a.addr = addr;
  a.up = true;
  a.loopback = loopback;
  return a;
}

// A node as on the netns test cluster: docker0 listed before eth0.
std::vector<NetAddr> Node(const std::string& eth_addr) {
  return {Addr("lo", "127.0.0.1", true), Addr("docker0", "172.17.0.1"),
          Addr("eth0", eth_addr), Addr("ib0", "10.0.0.5")};
}

TEST(SocketIfaceTest, MasterNodeUsesTheInterfaceHoldingTheAddressNotLo) {
  // On the master's node the kernel routes its own address over lo.
  RouteFacts f{"198.18.0.1", {"198.18.0.1"}, "198.18.0.1", ""};
  auto r = ChooseSocketIface(f, Node("198.18.0.1"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->ifname, "eth0");
  EXPECT_NE(r->why.find("holds the master's address 198.18.0.1"), std::string::npos);
  EXPECT_TRUE(r->warnings.empty());
}

TEST(SocketIfaceTest, OtherNodeUsesTheRoutesInterfaceNotTheFirstListed) {
  RouteFacts f{"n1", {"198.18.0.1"}, "198.18.0.2", ""};
  auto r = ChooseSocketIface(f, Node("198.18.0.2"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->ifname, "eth0");
  EXPECT_NE(r->why.find("n1 (198.18.0.1)"), std::string::npos) << r->why;
}

TEST(SocketIfaceTest, AnyResolvedAddressHeldHereCounts) {
  RouteFacts f{"n1", {"fd00::9", "10.0.0.5"}, "", ""};
  auto r = ChooseSocketIface(f, Node("198.18.0.2"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ifname, "ib0");
}

TEST(SocketIfaceTest, LoopbackMasterFallsBackToTheDefaultRouteWithAWarning) {
  // Debian's "127.0.1.1 <hostname>" on the master's node.
  RouteFacts f{"node001", {"127.0.1.1"}, "127.0.0.1", "198.18.0.1"};
  auto r = ChooseSocketIface(f, Node("198.18.0.1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ifname, "eth0");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("MASTER_ADDR=node001 (127.0.1.1)"), std::string::npos);
}

TEST(SocketIfaceTest, LoopbackMasterWithoutADefaultRouteSetsNothingAndSaysSo) {
  RouteFacts f{"node001", {"127.0.1.1"}, "127.0.0.1", ""};
  auto r = ChooseSocketIface(f, Node("198.18.0.1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ifname, "");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("are not set"), std::string::npos);
}

TEST(SocketIfaceTest, UnresolvedOrUnroutableMasterIsAnErrorNamingIt) {
  auto r = ChooseSocketIface(RouteFacts{"nosuch", {}, "", ""}, Node("198.18.0.2"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "MASTER_ADDR=nosuch does not resolve on this node");
  auto r2 = ChooseSocketIface(RouteFacts{"203.0.113.9", {"203.0.113.9"}, "", ""},
                              Node("198.18.0.2"));
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().message, "MASTER_ADDR=203.0.113.9: this node has no route to it");
}

TEST(SocketIfaceTest, RealKernelRoutesLoopbackOverLo) {
  EXPECT_EQ(RouteSource("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(RouteSource("not an address"), "");
  auto facts = GatherRouteFacts("127.0.0.1");
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->master_ips, std::vector<std::string>{"127.0.0.1"});
  auto bad = GatherRouteFacts("no-such-host.invalid");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("MASTER_ADDR=no-such-host.invalid does not resolve", 0), 0u);
}

TEST(SocketIfaceTest, PlanWritesExactNcclMatchAndKeepsUserValues) {
  SocketIface iface{"eth0", "because", {}};
  NcclConf none;
  auto vars = PlanSocketEnv(iface, EnvSnapshot{}, none);
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0].name, "GLOO_SOCKET_IFNAME");
  EXPECT_EQ(vars[0].value, "eth0");
  EXPECT_EQ(vars[1].name, "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(vars[1].value, "=eth0");

  EnvSnapshot env;
  env.Set("GLOO_SOCKET_IFNAME", "ens1");
  NcclConf conf{"/etc/nccl.conf", {{"NCCL_SOCKET_IFNAME", "ib0"}, {"GLOO_SOCKET_IFNAME", "x"}}};
  vars = PlanSocketEnv(iface, env, conf);
  EXPECT_EQ(vars[0].value, "ens1");
  EXPECT_TRUE(vars[0].user_kept);
  EXPECT_EQ(vars[1].value, "ib0");
  EXPECT_TRUE(vars[1].user_kept);
  EXPECT_NE(vars[1].why.find("set in /etc/nccl.conf"), std::string::npos);

  EXPECT_TRUE(PlanSocketEnv(SocketIface{}, EnvSnapshot{}, none).empty());
}

TEST(NetifTest, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.1.1"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_TRUE(IsLoopbackAddress("::ffff:127.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("198.18.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("fe80::1"));
  bool lo = false;
  for (const NetAddr& a : ListAddresses()) lo = lo || (a.ifname == "lo" && a.loopback);
  EXPECT_TRUE(lo);
}

}  // namespace
}  // namespace aml
