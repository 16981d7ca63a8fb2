#include "shim/topology/cpu_list.h"

#include <algorithm>

#include "shim/base/range_list.h"

namespace aml {

namespace {
constexpr int64_t kCpus = (1 << 20) + 1;  // CPU numbers 0 to 2^20
}  // namespace

Result<std::vector<int>> ParseCpuList(const std::string& what, const std::string& text) {
  std::string s = text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return std::vector<int>{};
  auto ranges = SplitRanges(s);
  auto cpus = ranges.ok() ? ExpandRanges(*ranges, kCpus, kCpus, "CPU")
                          : Result<std::vector<int>>(ranges.error());
  if (!cpus.ok()) return Error{what + "='" + s + "' is not a CPU list"};
  std::sort(cpus->begin(), cpus->end());
  cpus->erase(std::unique(cpus->begin(), cpus->end()), cpus->end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) { return FormatRanges(cpus); }

}  // namespace aml
