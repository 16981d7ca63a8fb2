#include "shim/topology/cpu_list.h"

#include <algorithm>

#include "shim/base/parse_int.h"

namespace aml {

Result<std::vector<int>> ParseCpuList(const std::string& what, const std::string& text) {
  std::string s = text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::vector<int> cpus;
  if (s.empty()) return cpus;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(start, comma - start);
    size_t dash = item.find('-');
    auto lo = ParseInt(what, item.substr(0, dash), 0, 1 << 20);
    if (!lo.ok()) return Error{what + "='" + s + "' is not a CPU list"};
    long hi = *lo;
    if (dash != std::string::npos) {
      auto h = ParseInt(what, item.substr(dash + 1), 0, 1 << 20);
      if (!h.ok() || *h < *lo) return Error{what + "='" + s + "' is not a CPU list"};
      hi = *h;
    }
    for (long c = *lo; c <= hi; ++c) cpus.push_back(static_cast<int>(c));
    start = comma + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace aml
