#include "shim/net/tcp.h"

#include "shim/base/hex.h"
#include "shim/base/host_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aml {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

int PollTimeoutMs(Deadline deadline) {
  // Rounded up, so that poll never returns before the deadline.
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1 << 30 ? 1 << 30 : static_cast<int>(left.count());
}

namespace {

// Waits for `events` on fd; false on timeout, and then the deadline has
// passed (callers tell a timeout from other errors by the clock).
bool WaitFor(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, PollTimeoutMs(deadline));
    if (rc > 0) return true;
    if (rc == 0 && Clock::now() >= deadline) return false;
    if (rc < 0 && errno != EINTR) return false;
  }
}

std::string AddrString(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
      inet_ntop(AF_INET, &sin6->sin6_addr.s6_addr[12], buf, sizeof buf);
    else
      inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

Result<Fd> ListenFamily(int family, int port) {
  Fd fd(socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error{std::string("socket: ") + std::strerror(errno)};
  int one = 1, zero = 0;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET6) {
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_addr = in6addr_any;
    sin6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *sin6;
  } else {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(INADDR_ANY);
    sin->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *sin;
  }
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0)
    return Error{"port " + std::to_string(port) + ": " + std::strerror(errno)};
  if (listen(fd.get(), 1024) != 0)
    return Error{"port " + std::to_string(port) + ": listen: " + std::strerror(errno)};
  return fd;
}

}  // namespace

Result<Listener> ListenAny(int port) {
  auto fd = ListenFamily(AF_INET6, port);
  if (!fd.ok()) {
    auto v4 = ListenFamily(AF_INET, port);
    if (!v4.ok()) return v4.error();
    fd = std::move(v4);
  }
  Listener l;
  l.fd = std::move(*fd);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  l.port = ss.ss_family == AF_INET6
               ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
               : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return l;
}

Result<Listener> ListenOn(const std::string& ip, int port) {
  if (ip.empty()) return ListenAny(port);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!NumericSockaddr(ip, port, &ss, &len)) return Error{ip + " is not a numeric address"};
  Fd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error{std::string("socket: ") + std::strerror(errno)};
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const std::string where = JoinHostPort(ip, port);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0)
    return Error{where + ": " + std::strerror(errno)};
  if (listen(fd.get(), 1024) != 0) return Error{where + ": listen: " + std::strerror(errno)};
  Listener l;
  l.fd = std::move(fd);
  len = sizeof ss;
  getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  l.port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return l;
}

bool NumericSockaddr(const std::string& ip, int port, sockaddr_storage* ss, socklen_t* len) {
  *ss = {};
  auto* sin = reinterpret_cast<sockaddr_in*>(ss);
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(ss);
  if (inet_pton(AF_INET, ip.c_str(), &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof *sin;
    return true;
  }
  if (inet_pton(AF_INET6, ip.c_str(), &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof *sin6;
    return true;
  }
  return false;
}

Result<Fd> ConnectTcp(const std::string& ip, int port, Deadline deadline) {
  std::string where = JoinHostPort(ip, port);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!NumericSockaddr(ip, port, &ss, &len)) return Error{where + ": not a numeric address"};
  Fd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error{where + ": socket: " + std::strerror(errno)};
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS) return Error{where + ": " + std::strerror(errno)};
    if (!WaitFor(fd.get(), POLLOUT, deadline)) return Error{where + ": connection timed out"};
    int err = 0;
    socklen_t elen = sizeof err;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) return Error{where + ": " + std::strerror(err)};
  }
  return fd;
}

namespace {

Status WriteAll(int fd, const char* p, size_t n, Deadline deadline) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFor(fd, POLLOUT, deadline)) return Error{"send timed out"};
    } else {
      return Error{std::string("send: ") + std::strerror(errno)};
    }
  }
  return Ok{};
}

Status ReadAll(int fd, char* p, size_t n, Deadline deadline) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
    } else if (r == 0) {
      return Error{"connection closed by the peer"};
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!WaitFor(fd, POLLIN, deadline)) return Error{"receive timed out"};
    } else if (errno == ECONNRESET) {
      return Error{kPeerReset};
    } else {
      return Error{std::string("receive: ") + std::strerror(errno)};
    }
  }
  return Ok{};
}

}  // namespace

Status SendFrame(int fd, const std::string& data, Deadline deadline) {
  uint32_t n = htonl(static_cast<uint32_t>(data.size()));
  std::string buf(reinterpret_cast<const char*>(&n), 4);
  buf += data;
  return WriteAll(fd, buf.data(), buf.size(), deadline);
}

bool IsPeerReset(const Error& e) { return e.message == kPeerReset; }

Result<std::string> RecvFrame(int fd, size_t max_len, Deadline deadline) {
  uint32_t n = 0;
  auto st = ReadAll(fd, reinterpret_cast<char*>(&n), 4, deadline);
  if (!st.ok()) return st.error();
  n = ntohl(n);
  if (n > max_len) return Error{"frame of " + std::to_string(n) + " bytes is too long"};
  std::string data(n, '\0');
  st = ReadAll(fd, data.data(), n, deadline);
  if (!st.ok()) return st.error();
  return data;
}

void AwaitPeerClose(int fd, Deadline deadline) {
  char buf[256];
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r == 0) return;
    if (r > 0) continue;
    if (errno == EINTR) continue;
    if (errno != EAGAIN || !WaitFor(fd, POLLIN, deadline)) return;
  }
}

std::string LocalAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return AddrString(ss);
}

std::string PeerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return AddrString(ss);
}

Result<std::vector<std::string>> ResolveHost(const std::string& what, const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return Error{what + "=" + host + " does not resolve: " + gai_strerror(rc)};
  std::vector<std::string> out;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    sockaddr_storage ss{};
    std::memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    std::string a = AddrString(ss);
    bool seen = false;
    for (const auto& x : out) seen = seen || x == a;
    if (!a.empty() && !seen) out.push_back(a);
  }
  freeaddrinfo(res);
  return out;
}

std::string RouteSource(const std::string& ip) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!NumericSockaddr(ip, 9, &ss, &len)) return "";
  Fd fd(socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  // connect() on UDP only picks the route; nothing is sent.
  if (!fd.valid() || connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) return "";
  return LocalAddress(fd.get());
}

}  // namespace aml
