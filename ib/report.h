// `aml-shim probe`: the fabric as a table for people and as JSON.
#pragma once

#include <string>

#include "ib/fabric.h"
#include "ib/fabric_env.h"

namespace aml {

std::string FormatProbeTable(const FabricReport& report, const FabricPlan& plan);
std::string FormatProbeJson(const FabricReport& report, const FabricPlan& plan);

}  // namespace aml
