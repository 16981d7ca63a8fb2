// --preflight tcp: before the command starts, every rank connects to
// MASTER_ADDR:MASTER_PORT, where rank 0 listens briefly. Rank 0 waits for all
// ranks (bounded) and sends one verdict to each; a rank that cannot connect
// says so with its host. Every rank then fails (exit 125) or goes on, instead
// of hanging in the framework's init. No MPI: MPI children still work.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "shim/result.h"

namespace aml {

struct TcpPreflightRequest {
  int rank = 0, size = 1;  // among the shims
  std::string master_addr;
  int master_port = 0;
  std::string host;  // this shim's host name, for reports
  std::chrono::milliseconds timeout{60000};
  // Rank 0 gives its verdict this long after the others give up connecting,
  // so that ranks which started late still count.
  std::chrono::milliseconds verdict_margin{3000};
  // A rank that could not reach rank 0 prints why, then waits this long
  // before it returns, so that rank 0's report is printed too: mpirun aborts
  // the whole job when the first rank exits non-zero.
  std::chrono::milliseconds linger{5000};
};

// Ok when every rank reached rank 0. The error is rank 0's report (which
// ranks never arrived), or why this rank could not take part. `said` is set
// when the error need not be printed by the caller: rank 0's report as
// received by another rank, or this rank's own failure, which it printed
// before lingering.
Status RunTcpPreflight(const TcpPreflightRequest& req, bool* said = nullptr);

// Rank 0's verdict from the ranks that said hello (pure, for tests):
// "" when all `size` ranks arrived.
std::string MissingRanksReport(const std::vector<bool>& arrived,
                               const std::vector<std::string>& who, int size,
                               const std::string& target, double waited_s);

}  // namespace aml
