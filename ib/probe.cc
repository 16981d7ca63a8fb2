#include "ib/probe.h"

#include <algorithm>
#include <cstdlib>

#include "ib/rate.h"
#include "shim/base/sysfs.h"

namespace aml {
namespace {

// "4: ACTIVE" -> "ACTIVE"
std::string AfterColon(const std::string& s) {
  size_t colon = s.find(':');
  if (colon == std::string::npos) return s;
  size_t start = s.find_first_not_of(' ', colon + 1);
  return start == std::string::npos ? "" : s.substr(start);
}

// "0000:0000:0000:0000:0000:ffff:c612:0501" -> "198.18.5.1"; "" if not IPv4.
std::string Ipv4FromGid(const std::string& gid) {
  const std::string mapped = "0000:0000:0000:0000:0000:ffff:";
  if (gid.size() != mapped.size() + 9 || gid.compare(0, mapped.size(), mapped) != 0) return "";
  std::string hex = gid.substr(mapped.size(), 4) + gid.substr(mapped.size() + 5, 4);
  char* end = nullptr;
  unsigned long v = std::strtoul(hex.c_str(), &end, 16);
  if (*end != '\0') return "";
  return std::to_string((v >> 24) & 255) + "." + std::to_string((v >> 16) & 255) + "." +
         std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255);
}

void ReadRoceGids(const std::string& port_dir, IbPort& port) {
  std::vector<std::string> indices = ListSysfsDir(port_dir + "/gid_attrs/types");
  std::vector<int> sorted;
  for (const auto& i : indices) sorted.push_back(std::atoi(i.c_str()));
  std::sort(sorted.begin(), sorted.end());
  for (int i : sorted) {
    std::string idx = std::to_string(i);
    auto type = ReadSysfsFile(port_dir + "/gid_attrs/types/" + idx);
    if (!type || *type != "RoCE v2") continue;
    auto gid = ReadSysfsFile(port_dir + "/gids/" + idx);
    if (!gid) continue;
    std::string ip = Ipv4FromGid(*gid);
    if (ip.empty()) continue;
    port.roce_v2_ipv4_gid_index = i;
    port.roce_ipv4 = ip;
    return;
  }
}

}  // namespace

bool IsMellanoxVfId(const std::string& vendor, const std::string& device) {
  if (vendor != "0x15b3") return false;
  for (const char* id : {"0x1012", "0x1014", "0x1016", "0x1018", "0x101a", "0x101c",
                         "0x101e", "0xa2d3"})
    if (device == id) return true;
  return false;
}

FabricReport ProbeSysfs(const std::string& sysfs_root) {
  FabricReport report;
  report.sysfs_root = sysfs_root;
  const std::string class_dir = sysfs_root + "/class/infiniband";
  for (const std::string& name : ListSysfsDir(class_dir)) {
    const std::string dev_dir = class_dir + "/" + name;
    const std::string pci_dir = dev_dir + "/device";
    IbDevice dev;
    dev.name = name;
    dev.pci = LinkTargetName(pci_dir).value_or("");
    dev.vendor = ReadSysfsFile(pci_dir + "/vendor").value_or("");
    dev.device = ReadSysfsFile(pci_dir + "/device").value_or("");
    if (auto numa = ReadSysfsFile(pci_dir + "/numa_node")) dev.numa_node = std::atoi(numa->c_str());
    if (PathExists(pci_dir + "/physfn")) {
      dev.vf = true;
      dev.vf_why = "device/physfn -> " + LinkTargetName(pci_dir + "/physfn").value_or("?");
    } else if (IsMellanoxVfId(dev.vendor, dev.device)) {
      dev.vf = true;
      dev.vf_why = "Mellanox VF device id " + dev.device + " (PF not visible: a guest)";
    }
    if (auto total = ReadSysfsFile(pci_dir + "/sriov_totalvfs"))
      dev.sriov_totalvfs = std::atoi(total->c_str());
    dev.netdevs = ListSysfsDir(pci_dir + "/net");
    std::vector<int> port_numbers;
    for (const auto& p : ListSysfsDir(dev_dir + "/ports")) port_numbers.push_back(std::atoi(p.c_str()));
    std::sort(port_numbers.begin(), port_numbers.end());
    for (int number : port_numbers) {
      const std::string port_dir = dev_dir + "/ports/" + std::to_string(number);
      IbPort port;
      port.port = number;
      port.state = AfterColon(ReadSysfsFile(port_dir + "/state").value_or(""));
      port.phys_state = AfterColon(ReadSysfsFile(port_dir + "/phys_state").value_or(""));
      port.link_layer = ReadSysfsFile(port_dir + "/link_layer").value_or("InfiniBand");
      port.rate = ReadSysfsFile(port_dir + "/rate").value_or("");
      if (auto r = ParsePortRate(port.rate)) port.rate_gbps = r->gbps;
      port.lid = ReadSysfsFile(port_dir + "/lid").value_or("");
      if (!port.infiniband()) ReadRoceGids(port_dir, port);
      dev.ports.push_back(std::move(port));
    }
    report.devices.push_back(std::move(dev));
  }
  return report;
}

}  // namespace aml
