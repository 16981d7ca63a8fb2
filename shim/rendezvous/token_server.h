// Rank 0's side of the reachability check: accepts connections on a listener
// in a thread and answers each with a proof derived from the job's token (a
// digest: the token itself travels only over MPI), so a rank that reaches
// some other listener (its own docker0 172.17.0.1, say) does not count it as
// reaching rank 0. Whoever connects is answered at once and never read from;
// at most kMaxHeld answered connections are kept open (so that TIME_WAIT
// lands on the peer), the rest are closed at once: idle strangers cannot
// use up rank 0's descriptors (docs/preflight.md, "TCP preflight: limits and
// strangers").
#pragma once

#include <string>
#include <thread>

#include "shim/net/tcp.h"

namespace aml {

class TokenServer {
 public:
  static constexpr size_t kMaxHeld = 1024;
  TokenServer(Listener listener, std::string answer);
  ~TokenServer();  // Stop()
  TokenServer(const TokenServer&) = delete;
  TokenServer& operator=(const TokenServer&) = delete;
  int port() const { return port_; }
  // Stops accepting, lets connected peers close first (bounded), closes all.
  void Stop();

 private:
  void Loop();
  Listener listener_;
  int port_;
  std::string answer_;
  Fd stop_read_, stop_write_;
  std::thread thread_;
};

}  // namespace aml
