#include "shim/plan/socket_iface.h"

#include <sys/socket.h>

#include "shim/net/tcp.h"

namespace aml {

Result<SocketIface> ChooseSocketIface(const RouteFacts& facts,
                                      const std::vector<NetAddr>& addrs) {
  SocketIface out;
  const std::string& host = facts.master_host;
  if (facts.master_ips.empty())
    return Error{"MASTER_ADDR=" + host + " does not resolve on this node"};
  for (const std::string& ip : facts.master_ips) {
    const NetAddr* held = FindAddress(addrs, ip);
    if (held && !held->loopback) {
      out.ifname = held->ifname;
      out.why = "this node holds the master's address " + ip + " on " + held->ifname;
      return out;
    }
  }
  const std::string& ip = facts.master_ips.front();
  std::string named = host == ip ? host : host + " (" + ip + ")";
  if (IsLoopbackAddress(ip)) {
    const NetAddr* dflt = facts.default_source.empty()
                              ? nullptr : FindAddress(addrs, facts.default_source);
    if (!dflt || dflt->loopback) {
      out.warnings.push_back(
          "MASTER_ADDR=" + named + " is a loopback address on this node of a "
          "multi-node job, and there is no default route to choose an "
          "interface by: GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME are not set; "
          "set them, or MASTER_ADDR, to what the other nodes reach");
      return out;
    }
    out.ifname = dflt->ifname;
    out.why = "the default route's interface (MASTER_ADDR=" + named +
              " is loopback here)";
    out.warnings.push_back(
        "MASTER_ADDR=" + named + " resolves to loopback on this node of a "
        "multi-node job; using " + dflt->ifname + " (" + dflt->addr +
        ", the default route) for GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME: set "
        "them yourself if the other nodes reach this one elsewhere");
    return out;
  }
  if (facts.route_source.empty())
    return Error{"MASTER_ADDR=" + named + ": this node has no route to it"};
  const NetAddr* src = FindAddress(addrs, facts.route_source);
  if (!src)
    return Error{"MASTER_ADDR=" + named + ": the route's source address " +
                 facts.route_source + " is on no interface of this node"};
  out.ifname = src->ifname;
  out.why = "the route to the master " + named + " leaves by " + src->ifname +
            " (" + src->addr + ")";
  return out;
}

Result<RouteFacts> GatherRouteFacts(const std::string& master_host) {
  RouteFacts f;
  f.master_host = master_host;
  auto ips = ResolveHost("MASTER_ADDR", master_host);
  if (!ips.ok()) return Error{ips.error().message + " on this node"};
  f.master_ips = *ips;
  if (!f.master_ips.empty()) f.route_source = RouteSource(f.master_ips.front());
  // 192.0.2.1 (TEST-NET-1) stands for "anywhere": only the route is looked up.
  f.default_source = RouteSource("192.0.2.1");
  return f;
}

std::vector<EnvVar> PlanSocketEnv(const SocketIface& iface, const EnvSnapshot& env,
                                  const NcclConf& conf) {
  std::vector<EnvVar> vars;
  if (iface.ifname.empty()) return vars;
  // nccl.conf is NCCL's file: it speaks for NCCL_SOCKET_IFNAME only.
  vars.push_back(DefaultUnlessUserSet("GLOO_SOCKET_IFNAME", iface.ifname, iface.why, env, nullptr));
  vars.push_back(DefaultUnlessUserSet("NCCL_SOCKET_IFNAME", "=" + iface.ifname, iface.why, env, &conf));
  return vars;
}

}  // namespace aml
