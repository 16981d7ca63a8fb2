#include "ib/fabric_env.h"

#include <fstream>
#include <set>

#include "shim/base/sysfs.h"
#include "shim/base/units.h"

namespace aml {
namespace {

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

NcclConf ReadNcclConf(const EnvSnapshot& env, const std::string& default_path) {
  NcclConf conf;
  std::string path = env.GetOr("NCCL_CONF_FILE", default_path);
  std::ifstream f(path);
  if (!f) return conf;
  conf.path = path;
  std::string line;
  while (std::getline(f, line)) {
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    size_t eq = line.find('=', start);
    if (eq == std::string::npos) continue;
    std::string key = line.substr(start, eq - start);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(eq + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    conf.vars[key] = value;
  }
  return conf;
}

EnvVar DefaultUnlessUserSet(const std::string& name, const std::string& value,
                            const std::string& why, const EnvSnapshot& env,
                            const NcclConf* conf) {
  auto kept = [&](const std::string& user, const std::string& where) {
    return EnvVar{name, user, where + " (aml-shim would write '" + value + "': " + why + ")",
                  true};
  };
  if (const std::string* v = env.Find(name)) return kept(*v, "set by the user");
  if (conf) {
    auto it = conf->vars.find(name);
    if (it != conf->vars.end()) return kept(it->second, "set in " + conf->path);
  }
  return {name, value, why, false};
}

FabricPlan PlanFabric(const FabricReport& report, const EnvSnapshot& env,
                      const NcclConf& conf, std::optional<int> gpu_numa) {
  FabricPlan plan;
  // A variable set in the environment or in nccl.conf is the user's.
  auto user_value = [&](const std::string& name) -> std::optional<std::string> {
    if (const std::string* v = env.Find(name)) return *v;
    auto it = conf.vars.find(name);
    if (it != conf.vars.end()) return it->second;
    return std::nullopt;
  };
  auto add = [&](const std::string& name, const std::string& value, const std::string& why) {
    plan.vars.push_back(DefaultUnlessUserSet(name, value, why, env, &conf));
  };

  struct Choice {
    const IbDevice* dev;
    const IbPort* port;
  };
  std::vector<Choice> ib, roce;
  std::vector<std::string> excluded;
  for (const IbDevice& d : report.devices) {
    for (const IbPort& p : d.ports) {
      if (p.usable() && p.infiniband()) ib.push_back({&d, &p});
      else if (p.usable()) roce.push_back({&d, &p});
      else if (p.active() && !p.infiniband())
        excluded.push_back(d.name + " (Ethernet, no RoCE v2 IPv4 GID)");
      else if (!p.active())
        excluded.push_back(d.name + ":" + std::to_string(p.port) + " (" +
                           (p.state.empty() ? "no state" : p.state) + ")");
    }
  }
  const bool use_ib = !ib.empty();
  const std::vector<Choice>& chosen = use_ib ? ib : roce;
  if (use_ib)
    for (const Choice& c : roce) excluded.push_back(c.dev->name + " (RoCE; InfiniBand preferred)");

  if (chosen.empty()) {
    if (report.devices.empty()) {
      plan.summary = "fabric: no RDMA devices under " + report.sysfs_root +
                     "/class/infiniband; NCCL will use TCP sockets";
    } else {
      plan.summary = "fabric: " + std::to_string(report.devices.size()) +
                     " RDMA device(s) but no active InfiniBand or RoCE v2 port (" +
                     Join(excluded, ", ") + "); NCCL will use TCP sockets";
      plan.warnings.push_back("no active InfiniBand/RoCE port: NCCL will use TCP sockets (" +
                              Join(excluded, ", ") + ")");
    }
  } else {
    std::vector<std::string> hca;
    std::set<std::string> rates, speeds;
    bool any_vf = false;
    for (const Choice& c : chosen) {
      hca.push_back(c.dev->name + ":" + std::to_string(c.port->port));
      rates.insert(FormatRate(c.port->rate_gbps) + " Gb/s");
      size_t open = c.port->rate.find('(');
      if (open != std::string::npos)
        speeds.insert(c.port->rate.substr(open + 1, c.port->rate.find(')') - open - 1));
      any_vf |= c.dev->vf;
    }
    std::string kind = use_ib ? "InfiniBand" : "RoCE";
    add("NCCL_IB_HCA", "=" + Join(hca, ","),
        "exactly the active " + kind + " ports, so NCCL never picks another device");
    if (!use_ib) {
      // NCCL before 2.21 uses GID index 0; point it at the RoCE v2 IPv4 GID.
      int index = *chosen.front().port->roce_v2_ipv4_gid_index;
      if (index != 0)
        add("NCCL_IB_GID_INDEX", std::to_string(index),
            "the RoCE v2 GID with IPv4 " + chosen.front().port->roce_ipv4 + " on " +
                chosen.front().dev->name);
    }
    const Choice* nearest = &chosen.front();
    if (gpu_numa)
      for (const Choice& c : chosen)
        if (c.dev->numa_node == *gpu_numa) {
          nearest = &c;
          break;
        }
    add("UCX_NET_DEVICES", nearest->dev->name + ":" + std::to_string(nearest->port->port),
        gpu_numa && nearest->dev->numa_node == *gpu_numa
            ? "the active port on the GPU's NUMA node " + std::to_string(*gpu_numa)
            : "the first active port");
    plan.usable = true;
    plan.summary = "fabric: " + std::to_string(chosen.size()) + " " + kind + " port" +
                   (chosen.size() > 1 ? "s" : "") + " active, " + Join({rates.begin(), rates.end()}, "/") +
                   (speeds.empty() ? "" : " " + Join({speeds.begin(), speeds.end()}, "/")) +
                   (any_vf ? ", SR-IOV VF" : "") + "; NCCL_IB_HCA=" + ValueOf(plan.vars, "NCCL_IB_HCA");
    if (!excluded.empty()) plan.summary += "; excluded: " + Join(excluded, ", ");
  }

  for (const char* file_var : {"NCCL_TOPO_FILE", "NCCL_GRAPH_FILE"}) {
    if (auto path = user_value(file_var)) {
      if (!PathExists(*path))
        plan.warnings.push_back(std::string(file_var) + "='" + *path + "' (" +
                                (env.Has(file_var) ? "environment" : conf.path) +
                                ") does not exist: NCCL will fail or ignore it");
    }
  }
  if (!conf.path.empty() && !conf.vars.empty()) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : conf.vars) kv.push_back(k + "=" + v);
    plan.summary += "; " + conf.path + " sets " + Join(kv, " ");
  }
  return plan;
}

}  // namespace aml
