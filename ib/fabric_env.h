// The NCCL/UCX variables that point a job at this node's fabric, each with
// its reason, and the one-line summary local rank 0 prints.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ib/fabric.h"
#include "shim/base/env_var.h"
#include "shim/base/env_snapshot.h"

namespace aml {

struct NcclConf {
  std::string path;                          // the file read, or ""
  std::map<std::string, std::string> vars;   // what it sets
};

// Reads NCCL_CONF_FILE when set, else `default_path` (/etc/nccl.conf):
// KEY=VALUE lines, '#' comments, as NCCL parses it.
NcclConf ReadNcclConf(const EnvSnapshot& env, const std::string& default_path);

// `value` as a default: the user's value wins when the variable is in the
// environment or, with `conf`, in nccl.conf; `why` is kept in the
// explanation either way.
EnvVar DefaultUnlessUserSet(const std::string& name, const std::string& value,
                            const std::string& why, const EnvSnapshot& env,
                            const NcclConf* conf);

struct FabricPlan {
  std::vector<EnvVar> vars;           // defaults (user values win)
  std::string summary;                // one line for local rank 0
  std::vector<std::string> warnings;  // e.g. TCP fallback, missing topo file
  bool usable = false;                // an active IB or RoCE v2 port exists
};

// `gpu_numa`: the NUMA node of this local rank's GPU when known, to choose
// the nearest port for UCX_NET_DEVICES.
FabricPlan PlanFabric(const FabricReport& report, const EnvSnapshot& env,
                      const NcclConf& conf, std::optional<int> gpu_numa = std::nullopt);

}  // namespace aml
