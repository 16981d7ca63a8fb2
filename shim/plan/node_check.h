// What must still hold on a node before it runs another attempt, with
// --spares (docs/control-plane.md, "Spares and retirement"): the GPUs the
// driver listed as the job started are all still there (a GPU fallen off
// the bus leaves /proc/driver/nvidia/gpus), and every RDMA port that was
// usable still is (a port gone DOWN, a link that lost its RoCE address).
// A node that fails it is retired at the restart; a spare takes its place.
#pragma once

#include <string>
#include <vector>

#include "ib/fabric.h"

namespace aml {

struct NodeBaseline {
  int gpus = 0;                    // the driver's GPUs as the job started
  std::vector<std::string> ports;  // the usable RDMA ports then: "mlx5_0 port 1"
};

NodeBaseline TakeBaseline(int gpus, const FabricReport& fabric);
// "" when the node is as fit as it was, else what it lost, in one line:
// "mlx5_0 port 1 is DOWN (it was usable as the job started)".
std::string CheckNode(const NodeBaseline& was, int gpus_now, const FabricReport& now);

// The GPUs the driver lists under `proc_root` ("/proc"), whatever
// CUDA_VISIBLE_DEVICES says.
int DriverGpus(const std::string& proc_root);

}  // namespace aml
