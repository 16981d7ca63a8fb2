#include "shim/plan/node_check.h"

#include "shim/topology/gpu_count.h"

namespace aml {
namespace {

std::string PortName(const IbDevice& d, const IbPort& p) {
  return d.name + " port " + std::to_string(p.port);
}

}  // namespace

NodeBaseline TakeBaseline(int gpus, const FabricReport& fabric) {
  NodeBaseline b;
  b.gpus = gpus;
  for (const IbDevice& d : fabric.devices)
    for (const IbPort& p : d.ports)
      if (p.usable()) b.ports.push_back(PortName(d, p));
  return b;
}

std::string CheckNode(const NodeBaseline& was, int gpus_now, const FabricReport& now) {
  std::vector<std::string> lost;
  if (gpus_now < was.gpus)
    lost.push_back(std::to_string(was.gpus - gpus_now) + " of its " + std::to_string(was.gpus) +
                   " GPUs gone from /proc/driver/nvidia/gpus");
  for (const std::string& name : was.ports) {
    const IbPort* found = nullptr;
    for (const IbDevice& d : now.devices)
      for (const IbPort& p : d.ports)
        if (PortName(d, p) == name) found = &p;
    if (!found)
      lost.push_back(name + " is gone");
    else if (!found->active())
      lost.push_back(name + " is " + (found->state.empty() ? "not ACTIVE" : found->state));
    else if (!found->usable())
      lost.push_back(name + " has no RoCE v2 IPv4 address");
  }
  if (lost.empty()) return "";
  std::string out;
  for (const std::string& l : lost) out += (out.empty() ? "" : "; ") + l;
  return out + " (usable as the job started)";
}

int DriverGpus(const std::string& proc_root) {
  return CountVisibleGpus(EnvSnapshot{}, proc_root).count;
}

}  // namespace aml
