// The GPUs this process may use and where they sit: PCI address from the
// NVIDIA driver's /proc/driver/nvidia/gpus/<pci>/information, NUMA node and
// local CPUs from sysfs (bus/pci/devices/<pci>/{numa_node,local_cpulist}).
// No CUDA needed: it must work on the node before anything is loaded.
#pragma once

#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

struct GpuInfo {
  std::string pci;   // "0000:07:00.0", as sysfs names it
  std::string uuid;  // "GPU-...", when the driver says
  int minor = -1;    // /dev/nvidia<minor>
  int index = -1;    // NVML's (and DCGM's): its place in PCI bus order among the node's GPUs
  int numa_node = -1;     // -1: unknown (sysfs says -1 on one-node machines)
  std::vector<int> cpus;  // local_cpulist
};

struct GpuTopology {
  std::vector<GpuInfo> gpus;  // in CUDA's order, after CUDA_VISIBLE_DEVICES
  std::string why;
  std::vector<std::string> warnings;
};

// GPUs in PCI bus order (CUDA's order with CUDA_DEVICE_ORDER=PCI_BUS_ID, and
// its default on nodes of identical GPUs), filtered and reordered by
// CUDA_VISIBLE_DEVICES (indices or GPU-UUID prefixes; MIG-... cannot be
// placed and yields a warning).
GpuTopology ReadGpuTopology(const EnvSnapshot& env, const std::string& proc_root = "/proc",
                            const std::string& sysfs_root = "/sys");

// --numa-bind: the CPUs for the process with local rank `local_rank` (it
// takes GPU local_rank of the visible ones). Error (to warn about, then run
// unbound) when that GPU or its CPUs are unknown.
struct CpuBinding {
  std::vector<int> cpus;
  std::string why;  // "GPU 3 (0000:4e:00.0) is on NUMA node 0: CPUs 0-47"
};
Result<CpuBinding> ChooseBinding(const GpuTopology& topo, int local_rank);

}  // namespace aml
