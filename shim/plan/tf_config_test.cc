#include "shim/plan/tf_config.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(TfConfig, WorkersOnly) {
  auto c = BuildTfConfig({"198.18.0.1:2222", "198.18.0.2:2223"}, 0, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c,
            R"({"cluster":{"worker":["198.18.0.1:2222","198.18.0.2:2223"]},)"
            R"("task":{"type":"worker","index":1},"environment":"cloud"})");
}

TEST(TfConfig, FirstKAreParameterServers) {
  std::vector<std::string> eps = {"a:1", "b:2", "c:3", "[fd00::1]:4"};
  auto ps = BuildTfConfig(eps, 1, 0);
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ(*ps, R"({"cluster":{"ps":["a:1"],"worker":["b:2","c:3","[fd00::1]:4"]},)"
                 R"("task":{"type":"ps","index":0},"environment":"cloud"})");
  auto w = BuildTfConfig(eps, 1, 3);
  ASSERT_TRUE(w.ok());
  EXPECT_NE(w->find(R"("task":{"type":"worker","index":2})"), std::string::npos);
}

TEST(TfConfig, NoWorkerLeftIsAnError) {
  auto c = BuildTfConfig({"a:1", "b:2"}, 2, 0);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, "--ps-count=2 leaves no worker among 2 processes");
}

TEST(TfConfig, SingleNodeEndpointsFollowTheMasterPort) {
  World w;
  w.size = {2, ""};
  w.master_addr = {"127.0.0.1", ""};
  w.master_port = {29500, ""};
  auto eps = TfEndpoints(w, 2, {});
  ASSERT_TRUE(eps.ok());
  EXPECT_EQ(*eps, (std::vector<std::string>{"127.0.0.1:29501", "127.0.0.1:29502",
                                            "127.0.0.1:29503", "127.0.0.1:29504"}));
  w.master_port = {65534, ""};
  EXPECT_FALSE(TfEndpoints(w, 2, {}).ok());
}

TEST(TfConfig, RendezvousEndpointsAreEachShimsAddressAndPorts) {
  World w;
  w.single_node = false;
  std::vector<PeerInfo> peers = {{"n1", "198.18.0.1", {4001, 4002}},
                                 {"n2", "198.18.0.2", {5001, 5002}}};
  auto eps = TfEndpoints(w, 2, peers);
  ASSERT_TRUE(eps.ok());
  EXPECT_EQ(*eps, (std::vector<std::string>{"198.18.0.1:4001", "198.18.0.1:4002",
                                            "198.18.0.2:5001", "198.18.0.2:5002"}));
  EXPECT_FALSE(TfEndpoints(w, 3, peers).ok());
  EXPECT_FALSE(TfEndpoints(w, 2, {}).ok());
}

}  // namespace
}  // namespace aml
