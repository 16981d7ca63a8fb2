// libibverbs, loaded at run time (shim/base/dynlib.h: AML_SHIM_LIBIBVERBS,
// else libibverbs.so.1; as NCCL's ibvwrap does) so that aml-shim starts on
// nodes without rdma-core. Only used to cross-check the
// sysfs probe on real hardware.
#pragma once

#include <string>
#include <vector>

#include "ib/fabric.h"
#include "shim/base/dynlib.h"
#include "shim/base/env_snapshot.h"

namespace aml {

struct VerbsPort {
  std::string device;
  int port = 0;
  int state = 0;       // enum ibv_port_state: 4 = ACTIVE
  int link_layer = 0;  // 1 = InfiniBand, 2 = Ethernet
};

struct VerbsResult {
  bool loaded = false;
  std::string message;  // why not loaded, or what it found
  std::vector<VerbsPort> ports;
};

LibrarySpec VerbsSpec();

// Loads libibverbs and queries every device's ports.
VerbsResult QueryVerbs(const EnvSnapshot& env);

// Adds a warning to `report` for every port whose state libibverbs and sysfs
// disagree on, and records what libibverbs said.
void CrossCheckWithVerbs(FabricReport& report, const VerbsResult& verbs);

}  // namespace aml
