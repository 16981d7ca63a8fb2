#include "shim/plan/tf_config.h"

#include "shim/base/host_port.h"
#include "shim/base/json.h"

namespace aml {

Result<std::string> BuildTfConfig(const std::vector<std::string>& endpoints, int ps_count,
                                  int rank) {
  const int n = static_cast<int>(endpoints.size());
  if (ps_count < 0 || ps_count >= n)
    return Error{"--ps-count=" + std::to_string(ps_count) + " leaves no worker among " +
                 std::to_string(n) + " processes"};
  if (rank < 0 || rank >= n)
    return Error{"TF_CONFIG: rank " + std::to_string(rank) + " is not among " +
                 std::to_string(n) + " processes"};
  JsonWriter w;
  w.BeginObject().Key("cluster").BeginObject();
  if (ps_count > 0) {
    w.Key("ps").BeginArray();
    for (int i = 0; i < ps_count; ++i) w.String(endpoints[static_cast<size_t>(i)]);
    w.EndArray();
  }
  w.Key("worker").BeginArray();
  for (int i = ps_count; i < n; ++i) w.String(endpoints[static_cast<size_t>(i)]);
  w.EndArray().EndObject();
  const bool ps = rank < ps_count;
  w.Key("task").BeginObject().Key("type").String(ps ? "ps" : "worker");
  w.Key("index").Int(ps ? rank : rank - ps_count).EndObject();
  w.Key("environment").String("cloud").EndObject();
  return w.str();
}

Result<std::vector<std::string>> TfEndpoints(const World& world, int nproc,
                                             const std::vector<PeerInfo>& peers) {
  std::vector<std::string> out;
  if (!peers.empty()) {
    for (const PeerInfo& p : peers)
      for (int i = 0; i < nproc; ++i) {
        if (static_cast<size_t>(i) >= p.ports.size())
          return Error{"--tf-config: rank " + std::to_string(out.size() / nproc) + " on " +
                       p.host + " starts fewer processes than --nproc-per-node=" +
                       std::to_string(nproc)};
        out.push_back(JoinHostPort(p.addr, p.ports[static_cast<size_t>(i)]));
      }
    return out;
  }
  if (!world.single_node)
    return Error{"--tf-config: a multi-node job needs MPI rendezvous for every rank's address"};
  const long n = long{world.size.value} * nproc;
  const long last = world.master_port.value + n;
  if (last > 65535)
    return Error{"--tf-config: ports MASTER_PORT+1.." + std::to_string(last) +
                 " go past 65535 (MASTER_PORT=" + std::to_string(world.master_port.value) + ")"};
  for (long r = 0; r < n; ++r)
    out.push_back(JoinHostPort(world.master_addr.value,
                               static_cast<int>(world.master_port.value + 1 + r)));
  return out;
}

}  // namespace aml
