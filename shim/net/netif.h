// This node's network interfaces and their addresses (getifaddrs), as plain
// values so that the rules that choose among them are testable.
#pragma once

#include <string>
#include <vector>

namespace aml {

struct NetAddr {
  std::string ifname;
  std::string addr;  // numeric, "198.18.0.1" or "fd00::1" (no scope)
  bool ipv6 = false;
  bool up = false;        // IFF_UP and IFF_RUNNING
  bool loopback = false;  // IFF_LOOPBACK or an address in 127/8 or ::1
  bool link_local = false;  // 169.254/16 or fe80::/10
};

// Every IPv4 and IPv6 address of this node, in the kernel's order.
std::vector<NetAddr> ListAddresses();

// The interface that holds `addr`, or nullptr.
const NetAddr* FindAddress(const std::vector<NetAddr>& addrs, const std::string& addr);

// True for 127/8, ::1 and IPv4-mapped loopback.
bool IsLoopbackAddress(const std::string& addr);

}  // namespace aml
