// --preflight: before the command starts, every rank (every shim) connects to
// MASTER_ADDR:MASTER_PORT, where rank 0 listens briefly. Rank 0 waits for all
// ranks (bounded) and sends one verdict to each; a rank that cannot connect
// says so with its host. Every rank then fails (exit 125) or goes on, instead
// of hanging in the framework's init. No MPI: MPI children still work.
//
// With a GPU stage (--preflight nccl), the same connections carry it: each
// shim reports its GPUs (its worker started at once, so CUDA loads while the
// ranks connect), rank 0 hands out NCCL unique ids (one per node, one for the
// job when it spans nodes), every shim runs the all-reduces, and rank 0
// judges the results (nccl_verdict.h) and sends the last verdict.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "shim/base/proof.h"
#include "shim/base/result.h"

namespace aml {

class GpuPreflight;

struct PreflightRequest {
  int rank = 0, size = 1;  // among the shims
  // Among the shims on this host; local_size > 1 gathers the node's hellos
  // first (node_fan_in.h), for the TCP check only.
  int local_rank = 0, local_size = 1;
  std::string master_addr;
  int master_port = 0;
  std::string host;  // this shim's host name, for reports
  // Proof of membership every hello carries (membership.h); "" for none.
  std::string token;  // the membership token ("" for none): names the node socket
  Prover prover;      // the hellos' proof (shim/base/proof.h)
  // Each stage's bound: connecting, the GPUs' start, the all-reduces.
  std::chrono::milliseconds timeout{60000};
  // Rank 0 gives its verdict this long after the others give up, so that
  // ranks which started late still count.
  std::chrono::milliseconds verdict_margin{3000};
  // A rank that could not reach rank 0 prints why, then waits before it
  // returns, so that rank 0's report is printed too (mpirun aborts the whole
  // job when the first rank exits non-zero): until rank 0's verdict is due
  // and as long again as the timeout (a 1 s preflight's failure ends at 2 s),
  // and never longer than this after its own line.
  std::chrono::milliseconds linger{5000};
  // --preflight nccl: this shim's GPUs (not owned); null for tcp only.
  GpuPreflight* gpu = nullptr;
  uint64_t bytes = 0;                // what the all-reduces moved, for the report
  std::optional<double> min_busbw;   // GB/s, judged by rank 0
};

struct PreflightOutcome {
  // Rank 0's report for the log when every rank passed (bandwidth lines).
  std::vector<std::string> report;
  // Rank 0: the connections that carried the ranks' hellos (one per node
  // with the node fan-in).
  size_t connections = 0;
};

// The error is rank 0's report (which ranks never arrived, what failed), or
// why this rank could not take part. `said` is set when the error need not be
// printed by the caller: rank 0's report as received by another rank, or this
// rank's own failure, which it printed before lingering.
Result<PreflightOutcome> RunPreflight(const PreflightRequest& req, bool* said = nullptr);

// Rank 0's verdict from the ranks that said hello (pure, for tests):
// "" when all `size` ranks arrived.
std::string MissingRanksReport(const std::vector<bool>& arrived,
                               const std::vector<std::string>& who, int size,
                               const std::string& target, double waited_s);

}  // namespace aml
