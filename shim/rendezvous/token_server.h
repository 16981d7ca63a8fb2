// Rank 0's side of the reachability check: accepts connections on a listener
// in a thread and answers each with a token that only this job knows, so a
// rank that reaches some other listener (its own docker0 172.17.0.1, say)
// does not count it as reaching rank 0.
#pragma once

#include <string>
#include <thread>

#include "shim/net/tcp.h"

namespace aml {

class TokenServer {
 public:
  TokenServer(Listener listener, std::string token);
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
  std::string token_;
  Fd stop_read_, stop_write_;
  std::thread thread_;
};

}  // namespace aml
