#include "shim/base/host_port.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(HostPort, HostAndPort) {
  auto r = ParseHostPort("AZ_BATCH_MASTER_NODE", "10.0.0.4:6105");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->host, "10.0.0.4");
  EXPECT_EQ(r->port, 6105);
}

TEST(HostPort, HostOnly) {
  auto r = ParseHostPort("X", "node-0.cluster");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->host, "node-0.cluster");
  EXPECT_FALSE(r->port);
}

TEST(HostPort, BracketedIpv6) {
  auto r = ParseHostPort("X", "[fe80::1%eth0]:6105");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->host, "fe80::1%eth0");
  EXPECT_EQ(r->port, 6105);
  auto bare = ParseHostPort("X", "[2001:db8::7]");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->host, "2001:db8::7");
  EXPECT_FALSE(bare->port);
}

TEST(HostPort, UnbracketedIpv6IsAllHost) {
  auto r = ParseHostPort("X", "2001:db8::7");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->host, "2001:db8::7");
  EXPECT_FALSE(r->port);
}

TEST(HostPort, BadInputNamesVariableAndValue) {
  struct {
    const char* in;
    const char* msg;
  } cases[] = {
      {"10.0.0.4:", "AZ_BATCH_MASTER_NODE='10.0.0.4:' has a bad port '' (expected 1..65535)"},
      {"10.0.0.4:abc", "AZ_BATCH_MASTER_NODE='10.0.0.4:abc' has a bad port 'abc' (expected 1..65535)"},
      {"10.0.0.4:0", "AZ_BATCH_MASTER_NODE='10.0.0.4:0' has a bad port '0' (expected 1..65535)"},
      {"10.0.0.4:65536", "AZ_BATCH_MASTER_NODE='10.0.0.4:65536' has a bad port '65536' (expected 1..65535)"},
      {":6105", "AZ_BATCH_MASTER_NODE=':6105' has an empty host"},
      {"", "AZ_BATCH_MASTER_NODE='' has an empty host"},
      {"[fe80::1:6105", "AZ_BATCH_MASTER_NODE='[fe80::1:6105' has '[' without a closing ']'"},
      {"[fe80::1]6105", "AZ_BATCH_MASTER_NODE='[fe80::1]6105' has text after ']' that is not ':port'"},
      {"[host]:1", "AZ_BATCH_MASTER_NODE='[host]:1' brackets a host that is not an IPv6 address"},
      {"a b:1", "AZ_BATCH_MASTER_NODE='a b:1' has a malformed host"},
  };
  for (const auto& c : cases) {
    auto r = ParseHostPort("AZ_BATCH_MASTER_NODE", c.in);
    ASSERT_FALSE(r.ok()) << c.in;
    EXPECT_EQ(r.error().message, c.msg);
  }
}

TEST(HostPort, JoinBracketsIpv6) {
  EXPECT_EQ(JoinHostPort("fe80::1", 5), "[fe80::1]:5");
  EXPECT_EQ(JoinHostPort("h", 5), "h:5");
}

}  // namespace
}  // namespace aml
