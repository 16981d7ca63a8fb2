// The kernel's CPU list format ("0-23,48-71", as in sysfs local_cpulist and
// node cpulist files).
#pragma once

#include <string>
#include <vector>

#include "shim/base/result.h"

namespace aml {

// Sorted, distinct CPU numbers. `what` names the file or variable in errors.
Result<std::vector<int>> ParseCpuList(const std::string& what, const std::string& text);

// Back to the compact form ("0-3,8").
std::string FormatCpuList(const std::vector<int>& cpus);

}  // namespace aml
