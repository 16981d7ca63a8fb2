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
};

// Ok when every rank reached rank 0. The error is rank 0's report (which
// ranks never arrived), or why this rank could not take part. `relayed` is
// set when the error is rank 0's report received by another rank, which need
// not print it again.
Status RunTcpPreflight(const TcpPreflightRequest& req, bool* relayed = nullptr);

// Rank 0's verdict from the ranks that said hello (pure, for tests):
// "" when all `size` ranks arrived.
std::string MissingRanksReport(const std::vector<bool>& arrived,
                               const std::vector<std::string>& who, int size,
                               const std::string& target, double waited_s);

}  // namespace aml
