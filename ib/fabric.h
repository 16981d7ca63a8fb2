// What this node's RDMA fabric looks like (docs/fabric.md, "Fabric: InfiniBand, RoCE, SR-IOV").
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace aml {

struct IbPort {
  int port = 0;
  std::string state;       // "ACTIVE", "DOWN", ... (from "4: ACTIVE")
  std::string phys_state;  // "LinkUp", "Disabled", ...
  std::string link_layer;  // "InfiniBand" or "Ethernet"
  double rate_gbps = 0;
  std::string rate;        // the kernel's text, "200 Gb/sec (4X HDR)"
  std::string lid;         // "0x12" (InfiniBand)
  // Ethernet: the lowest GID index of type RoCE v2 with an IPv4 address.
  std::optional<int> roce_v2_ipv4_gid_index;
  std::string roce_ipv4;   // that GID's IPv4 address

  bool active() const { return state == "ACTIVE"; }
  bool infiniband() const { return link_layer == "InfiniBand"; }
  // Usable by NCCL: an active IB port, or an active Ethernet port with a
  // RoCE v2 IPv4 GID (Azure's accelerated-networking VF has none).
  bool usable() const {
    return active() && (infiniband() || roce_v2_ipv4_gid_index.has_value());
  }
};

struct IbDevice {
  std::string name;    // "mlx5_ib0"
  std::string pci;     // "0000:01:00.0"
  std::string vendor;  // "0x15b3"
  std::string device;  // "0x101c"
  bool vf = false;
  std::string vf_why;  // "device/physfn" or "Mellanox VF device id 0x101c"
  std::optional<int> sriov_totalvfs;  // a PF that can have VFs
  int numa_node = -1;
  std::vector<std::string> netdevs;
  std::vector<IbPort> ports;
};

struct FabricReport {
  std::string sysfs_root;
  std::vector<IbDevice> devices;
  std::vector<std::string> warnings;  // e.g. libibverbs disagreeing with sysfs
  std::string verbs;                  // what libibverbs said, when loaded
};

}  // namespace aml
