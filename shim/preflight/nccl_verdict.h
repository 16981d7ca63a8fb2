// Rank 0's decisions in the NCCL preflight (pure, for tests): which unique
// ids each shim gets, and the verdict on the results: bandwidth as nccl-tests
// computes it (algbw = bytes / time, busbw = algbw * 2(n-1)/n for
// all-reduce), one line per node, the job-wide figure, and what fails the
// job: a rank's error, or a node whose busbw is under --min-busbw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shim/preflight/nccl_wire.h"
#include "shim/base/result.h"

namespace aml {

// The ids for each shim (index: the shim's rank) from every shim's GPU hello:
// its node's id (made by the node's LOCAL_RANK 0 shim) and, when the job
// spans nodes, rank 0's world id. The error is the report: each rank whose
// GPUs are not ready, with its host, or NCCL versions that differ.
Result<std::vector<WorkerGo>> PlanNcclIds(const std::vector<GpuHello>& hellos,
                                          const std::vector<std::string>& hosts);

struct Bandwidth {
  double algbw_gbps = 0;  // 1e9 bytes/s, as nccl-tests
  double busbw_gbps = 0;  // 0 for one rank: nothing crosses a link
};
Bandwidth AllReduceBandwidth(uint64_t bytes, double seconds, int nranks);

// What one shim told rank 0.
struct ShimOutcome {
  int rank = 0;  // the shim's rank
  std::string host;
  int node = 0;
  int gpus = 0;
  bool ok = false;
  std::string error;
  double node_s = -1, world_s = -1;
  // False: rank 0 stopped waiting for it at another rank's failure.
  bool finished = true;
};

struct NcclVerdict {
  bool failed = false;
  std::vector<std::string> lines;  // the report, one line per node, then the job
};

// A job of several nodes also gets the job-wide all-reduce line.
NcclVerdict JudgeAllReduce(const std::vector<ShimOutcome>& shims, uint64_t bytes,
                           std::optional<double> min_busbw_gbps);

}  // namespace aml
