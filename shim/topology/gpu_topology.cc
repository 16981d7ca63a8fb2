#include "shim/topology/gpu_topology.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "shim/base/sysfs.h"
#include "shim/topology/cpu_list.h"

namespace aml {
namespace {

std::string Trim(std::string s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

GpuInfo ReadGpu(const std::string& dir, const std::string& name, const std::string& sysfs_root) {
  GpuInfo g;
  g.pci = Lower(name);
  std::istringstream info(ReadSysfsFile(dir + "/" + name + "/information").value_or(""));
  std::string line;
  while (std::getline(info, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(line.substr(0, colon)), value = Trim(line.substr(colon + 1));
    if (key == "GPU UUID") g.uuid = value;
    if (key == "Device Minor") g.minor = std::atoi(value.c_str());
    if (key == "Bus Location") g.pci = Lower(value);
  }
  std::string dev = sysfs_root + "/bus/pci/devices/" + g.pci;
  if (auto numa = ReadSysfsFile(dev + "/numa_node"); numa && !numa->empty())
    g.numa_node = std::atoi(numa->c_str());
  if (auto list = ReadSysfsFile(dev + "/local_cpulist")) {
    auto cpus = ParseCpuList(dev + "/local_cpulist", *list);
    if (cpus.ok()) g.cpus = *cpus;
  }
  return g;
}

}  // namespace

GpuTopology ReadGpuTopology(const EnvSnapshot& env, const std::string& proc_root,
                            const std::string& sysfs_root) {
  GpuTopology t;
  std::string dir = proc_root + "/driver/nvidia/gpus";
  if (!PathExists(dir)) {
    t.why = "no " + dir + " (no NVIDIA driver)";
    return t;
  }
  std::vector<GpuInfo> all;
  for (const auto& n : ListSysfsDir(dir)) all.push_back(ReadGpu(dir, n, sysfs_root));
  std::sort(all.begin(), all.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.pci < b.pci; });
  for (size_t i = 0; i < all.size(); ++i) all[i].index = static_cast<int>(i);
  t.why = std::to_string(all.size()) + " GPUs in " + dir;
  const std::string* visible = env.Find("CUDA_VISIBLE_DEVICES");
  if (!visible) {
    t.gpus = std::move(all);
    return t;
  }
  t.why += ", CUDA_VISIBLE_DEVICES=" + *visible;
  std::istringstream in(*visible);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = Trim(item);
    bool index = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
    if (index) {
      size_t i = std::stoul(item);
      if (i >= all.size()) break;  // CUDA stops at the first invalid entry
      t.gpus.push_back(all[i]);
    } else if (item.rfind("GPU-", 0) == 0) {
      auto it = std::find_if(all.begin(), all.end(), [&](const GpuInfo& g) {
        return !g.uuid.empty() && g.uuid.rfind(item, 0) == 0;
      });
      if (it == all.end()) break;
      t.gpus.push_back(*it);
    } else {
      if (item.rfind("MIG-", 0) == 0)
        t.warnings.push_back("CUDA_VISIBLE_DEVICES entry " + item +
                             " is a MIG instance: its GPU's place is not known here");
      break;
    }
  }
  return t;
}

Result<CpuBinding> ChooseBinding(const GpuTopology& topo, int local_rank) {
  if (topo.gpus.empty())
    return Error{"--numa-bind: no GPU information (" + topo.why + "); children run unbound"};
  if (local_rank < 0 || static_cast<size_t>(local_rank) >= topo.gpus.size())
    return Error{"--numa-bind: local rank " + std::to_string(local_rank) + " has no GPU of its own (" +
                 std::to_string(topo.gpus.size()) + " visible: " + topo.why + "); it runs unbound"};
  const GpuInfo& g = topo.gpus[static_cast<size_t>(local_rank)];
  if (g.cpus.empty())
    return Error{"--numa-bind: GPU " + std::to_string(local_rank) + " (" + g.pci +
                 ") has no local_cpulist in sysfs; local rank " + std::to_string(local_rank) +
                 " runs unbound"};
  CpuBinding b;
  b.cpus = g.cpus;
  b.why = "GPU " + std::to_string(local_rank) + " (" + g.pci + ") is on NUMA node " +
          std::to_string(g.numa_node) + ": CPUs " + FormatCpuList(g.cpus);
  return b;
}

}  // namespace aml
