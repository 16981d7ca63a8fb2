// Small blocking-with-deadline TCP helpers for the rendezvous and the
// preflight: every call is bounded by a deadline, errors say what and where.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "shim/base/result.h"

namespace aml {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// poll(2)'s timeout for `deadline`: milliseconds left, rounded up, 0 once past.
int PollTimeoutMs(Deadline deadline);

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  void reset();

 private:
  int fd_ = -1;
};

// A listening socket on every address (IPv6 dual stack where the kernel has
// it, else IPv4) at `port`, 0 for a free one; SO_REUSEADDR so the training
// framework can bind the same port right after.
struct Listener {
  Fd fd;
  int port = 0;
};
Result<Listener> ListenAny(int port);
// The same on one numeric address ("" for every address: ListenAny).
Result<Listener> ListenOn(const std::string& ip, int port);

// Fills `ss`/`len` for a numeric IPv4 or IPv6 address; false if `ip` is not one.
bool NumericSockaddr(const std::string& ip, int port, sockaddr_storage* ss, socklen_t* len);

// Connects to ip:port (numeric) before `deadline`. The error names both.
Result<Fd> ConnectTcp(const std::string& ip, int port, Deadline deadline);

// What RecvFrame says when the peer closed with bytes of ours unread (the
// kernel's reset): it never read them (a crowded door closed it).
inline constexpr char kPeerReset[] =
    "connection reset by the peer (closed without reading what was sent)";
bool IsPeerReset(const Error& e);

// Frames: 4-byte big-endian length, then the bytes.
Status SendFrame(int fd, const std::string& data, Deadline deadline);
Result<std::string> RecvFrame(int fd, size_t max_len, Deadline deadline);

// Waits for the peer to close (read returns 0) before `deadline`, so that the
// TIME_WAIT state lands on the peer, not on a port the job needs.
void AwaitPeerClose(int fd, Deadline deadline);

// The local / peer numeric address of a connected socket.
std::string LocalAddress(int fd);
std::string PeerAddress(int fd);

// Numeric addresses of a host name (or of a numeric address), in order.
Result<std::vector<std::string>> ResolveHost(const std::string& what, const std::string& host);

// The local source address of the route to `ip` (numeric), or "" when
// unreachable: an unconnected UDP socket asks the kernel, nothing is sent.
std::string RouteSource(const std::string& ip);

}  // namespace aml
