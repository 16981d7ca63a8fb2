// GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME for a job that spans nodes: the
// interface this node uses to reach the master, or, on the master's own node,
// the interface that holds the master's address (the route there is `lo`).
// Without them Gloo binds to whatever the hostname resolves to (often
// 127.0.1.1) and NCCL may bootstrap over docker0 or IPoIB.
#pragma once

#include <string>
#include <vector>

#include "ib/fabric_env.h"
#include "shim/net/netif.h"
#include "shim/net/tcp.h"
#include "shim/base/env_var.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

struct SocketIface {
  std::string ifname;  // "" when no choice could be made (see warnings)
  std::string why;
  std::vector<std::string> warnings;
};

// What the kernel says about reaching one address: the local source address
// of a route to it ("" when there is no route).
struct RouteFacts {
  std::string master_host;               // as given (a name or an address)
  std::vector<std::string> master_ips;   // what it resolves to, in order
  std::string route_source;              // toward master_ips[0]
  std::string default_source;            // toward the default route, or ""
};

// The rule, on facts: an address of the master held here wins; a loopback
// master falls back to the default route's interface, with a warning; else the
// interface of the route's source address.
Result<SocketIface> ChooseSocketIface(const RouteFacts& facts,
                                      const std::vector<NetAddr>& addrs);

// Gathers the facts on this node (resolves the name, asks the kernel for the
// route with an unconnected UDP socket: no packet is sent).
Result<RouteFacts> GatherRouteFacts(const std::string& master_host);

// The two variables, as defaults: a value in the environment or nccl.conf
// wins. NCCL's gets the '=' prefix so it matches the name exactly.
std::vector<EnvVar> PlanSocketEnv(const SocketIface& iface, const EnvSnapshot& env,
                                  const NcclConf& conf);

}  // namespace aml
