#include "ib/report.h"

#include <cstdio>

#include "shim/base/json.h"

namespace aml {

std::string FormatProbeTable(const FabricReport& report, const FabricPlan& plan) {
  std::string out;
  if (report.devices.empty()) {
    out += "no RDMA devices (" + report.sysfs_root + "/class/infiniband is empty or absent)\n";
  } else {
    char line[512];
    std::snprintf(line, sizeof line, "%-12s %-5s %-13s %-8s %-10s %-10s %-9s %-22s %-4s %-3s %s\n",
                  "DEVICE", "PORT", "PCI", "ID", "STATE", "PHYS", "LINK", "RATE", "NUMA", "VF",
                  "NETDEVS");
    out += line;
    for (const IbDevice& d : report.devices) {
      std::string netdevs;
      for (const auto& n : d.netdevs) netdevs += (netdevs.empty() ? "" : ",") + n;
      for (const IbPort& p : d.ports) {
        std::string link = p.link_layer;
        if (!p.infiniband() && p.roce_v2_ipv4_gid_index)
          link += " (RoCE v2 GID " + std::to_string(*p.roce_v2_ipv4_gid_index) + " " + p.roce_ipv4 + ")";
        std::snprintf(line, sizeof line, "%-12s %-5d %-13s %-8s %-10s %-10s %-9s %-22s %-4d %-3s %s\n",
                      d.name.c_str(), p.port, d.pci.c_str(), d.device.c_str(), p.state.c_str(),
                      p.phys_state.c_str(), p.link_layer.c_str(), p.rate.c_str(), d.numa_node,
                      d.vf ? "yes" : "no", netdevs.c_str());
        out += line;
        if (link != p.link_layer) out += "             " + link + "\n";
      }
    }
  }
  out += plan.summary + "\n";
  for (const EnvVar& v : plan.vars)
    out += (v.user_kept ? "  kept " : "  set  ") + v.name + "=" + v.value + "  <- " + v.why + "\n";
  for (const auto& w : report.warnings) out += "warning: " + w + "\n";
  for (const auto& w : plan.warnings) out += "warning: " + w + "\n";
  if (!report.verbs.empty()) out += report.verbs + "\n";
  return out;
}

std::string FormatProbeJson(const FabricReport& report, const FabricPlan& plan) {
  JsonWriter j;
  j.BeginObject();
  j.Key("sysfs_root").String(report.sysfs_root);
  j.Key("devices").BeginArray();
  for (const IbDevice& d : report.devices) {
    j.BeginObject();
    j.Key("name").String(d.name);
    j.Key("pci").String(d.pci);
    j.Key("vendor").String(d.vendor);
    j.Key("device").String(d.device);
    j.Key("vf").Bool(d.vf);
    j.Key("vf_reason").String(d.vf_why);
    if (d.sriov_totalvfs) j.Key("sriov_totalvfs").Int(*d.sriov_totalvfs);
    j.Key("numa_node").Int(d.numa_node);
    j.Key("netdevs").BeginArray();
    for (const auto& n : d.netdevs) j.String(n);
    j.EndArray();
    j.Key("ports").BeginArray();
    for (const IbPort& p : d.ports) {
      j.BeginObject();
      j.Key("port").Int(p.port);
      j.Key("state").String(p.state);
      j.Key("phys_state").String(p.phys_state);
      j.Key("link_layer").String(p.link_layer);
      j.Key("rate_gbps").Number(p.rate_gbps);
      j.Key("rate").String(p.rate);
      j.Key("lid").String(p.lid);
      if (p.roce_v2_ipv4_gid_index) {
        j.Key("roce_v2_gid_index").Int(*p.roce_v2_ipv4_gid_index);
        j.Key("roce_ipv4").String(p.roce_ipv4);
      }
      j.Key("usable").Bool(p.usable());
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("env").BeginObject();
  for (const EnvVar& v : plan.vars) j.Key(v.name).String(v.value);
  j.EndObject();
  j.Key("usable").Bool(plan.usable);
  j.Key("summary").String(plan.summary);
  j.Key("warnings").BeginArray();
  for (const auto& w : report.warnings) j.String(w);
  for (const auto& w : plan.warnings) j.String(w);
  j.EndArray();
  j.Key("verbs").String(report.verbs);
  j.EndObject();
  return j.str() + "\n";
}

}  // namespace aml
