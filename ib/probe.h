// Reads the fabric from sysfs: <root>/class/infiniband/<dev>/...
#pragma once

#include <string>

#include "ib/fabric.h"

namespace aml {

FabricReport ProbeSysfs(const std::string& sysfs_root);

// True for Mellanox VF device ids seen in guests without a visible PF.
bool IsMellanoxVfId(const std::string& vendor, const std::string& device);

}  // namespace aml
