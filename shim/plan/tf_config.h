// TensorFlow's TF_CONFIG for one process: the cluster (every process's
// host:port, the first `ps_count` as parameter servers, the rest as workers)
// and this process's task. MultiWorkerMirroredStrategy reads the worker list;
// parameter-server jobs read ps and worker.
#pragma once

#include <string>
#include <vector>

#include "shim/rendezvous/rendezvous.h"
#include "shim/base/result.h"
#include "shim/world/world.h"

namespace aml {

// `endpoints`: host:port of every process, in RANK order. Errors when
// ps_count leaves no worker or the rank is out of range.
Result<std::string> BuildTfConfig(const std::vector<std::string>& endpoints, int ps_count,
                                  int rank);

// host:port of every process of the job (S shims of `nproc` children each):
// from MPI rendezvous's `peers` (each shim's address toward the master and the
// ports it found free), or, on a single node, the master's address with ports
// MASTER_PORT+1+RANK, the same on every rank without talking.
Result<std::vector<std::string>> TfEndpoints(const World& world, int nproc,
                                             const std::vector<PeerInfo>& peers);

}  // namespace aml
