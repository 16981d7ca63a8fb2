#include "shim/net/netif.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>

namespace aml {

bool IsLoopbackAddress(const std::string& addr) {
  in_addr v4{};
  if (inet_pton(AF_INET, addr.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, addr.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

std::vector<NetAddr> ListAddresses() {
  std::vector<NetAddr> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    NetAddr a;
    a.ifname = ifa->ifa_name;
    a.ipv6 = family == AF_INET6;
    if (family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr);
      inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf);
      a.link_local = (ntohl(sin->sin_addr.s_addr) >> 16) == 0xa9fe;
    } else {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
      inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf);
      a.link_local = IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr);
    }
    a.addr = buf;
    a.up = (ifa->ifa_flags & IFF_UP) && (ifa->ifa_flags & IFF_RUNNING);
    a.loopback = (ifa->ifa_flags & IFF_LOOPBACK) || IsLoopbackAddress(a.addr);
    out.push_back(std::move(a));
  }
  freeifaddrs(list);
  return out;
}

const NetAddr* FindAddress(const std::vector<NetAddr>& addrs, const std::string& addr) {
  for (const NetAddr& a : addrs)
    if (a.addr == addr) return &a;
  return nullptr;
}

}  // namespace aml
