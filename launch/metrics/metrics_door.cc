#include "launch/metrics/metrics_door.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "shim/base/host_port.h"

namespace aml {
namespace {

std::string Reply(const std::string& status, const std::string& type, const std::string& body) {
  return "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n" + body;
}

std::string ErrorReply(const std::string& status) {
  return Reply(status, "text/plain; charset=utf-8", status + "\n");
}

}  // namespace

Result<MetricsAddr> ParseMetricsAddr(const std::string& value) {
  const std::string what = "--metrics-addr";
  const bool any = !value.empty() && value[0] == ':';
  auto hp = ParseHostPort(what, any ? "0.0.0.0" + value : value);
  if (!hp.ok()) return hp.error();
  if (!hp->port)
    return Error{what + " '" + value + "' has no port: give HOST:PORT (:PORT for every address)"};
  MetricsAddr a;
  a.port = *hp->port;
  a.host = any ? "" : hp->host;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!a.host.empty() && !NumericSockaddr(a.host, a.port, &ss, &len))
    return Error{what + " '" + value + "': the host must be a numeric address (:" +
                      std::to_string(a.port) + " for every address)"};
  return a;
}

Result<std::unique_ptr<MetricsDoor>> MetricsDoor::Open(const MetricsAddr& addr) {
  auto l = ListenOn(addr.host, addr.port);
  if (!l.ok())
    return Error{"--metrics-addr " + JoinHostPort(addr.host.empty() ? "" : addr.host, addr.port) +
                      ": cannot listen: " + l.error().message +
                      " (two shims on one host need a port each)"};
  return std::unique_ptr<MetricsDoor>(new MetricsDoor(std::move(l->fd), l->port));
}

void MetricsDoor::AddPollFds(std::vector<pollfd>* fds) const {
  fds->push_back({listener_.get(), POLLIN, 0});
  for (const auto& c : conns_)
    fds->push_back({c->fd.get(), static_cast<short>(c->answering ? POLLOUT : POLLIN), 0});
}

void MetricsDoor::Accept(double now) {
  for (size_t i = 0; i < kDoorAcceptBurst; ++i) {
    Fd fd(accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;  // EAGAIN: none waiting (or an error: tried again next time)
    if (conns_.size() >= kSeats) {
      std::vector<DoorSeat> seats;
      for (const auto& c : conns_) seats.push_back({c->in.size(), c->since});
      conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(SeatToFree(seats)));
      ++given_up_;
    }
    auto c = std::make_unique<Conn>();
    c->fd = std::move(fd);
    c->since = now;
    conns_.push_back(std::move(c));
  }
}

void MetricsDoor::Answer(Conn* c, const std::function<std::string()>& metrics) {
  c->answering = true;
  const size_t eol = c->in.find("\r\n") != std::string::npos ? c->in.find("\r\n") : c->in.find('\n');
  const std::string line = c->in.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  const std::string method = line.substr(0, sp1);
  const std::string target =
      sp1 == std::string::npos ? "" : line.substr(sp1 + 1, sp2 == std::string::npos ? sp2 : sp2 - sp1 - 1);
  const std::string path = target.substr(0, target.find('?'));
  if (method != "GET" && method != "HEAD") {
    c->out = ErrorReply("405 Method Not Allowed");
  } else if (path != "/metrics") {
    c->out = ErrorReply("404 Not Found");
  } else {
    std::string body = metrics();
    if (body.size() > kMaxAnswer) body.resize(body.rfind('\n', kMaxAnswer - 1) + 1);  // whole lines
    c->out = Reply("200 OK", "text/plain; version=0.0.4; charset=utf-8", body);
    if (method == "HEAD") c->out.resize(c->out.size() - body.size());
    ++served_;
  }
}

bool MetricsDoor::Read(Conn* c, const std::function<std::string()>& metrics) {
  char buf[4096];
  const ssize_t r = recv(c->fd.get(), buf, sizeof buf, 0);
  if (r == 0) return false;  // gone before its request ended
  if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  c->in.append(buf, static_cast<size_t>(r));
  if (c->in.size() > kMaxRequest) {
    c->answering = true;
    c->out = ErrorReply("431 Request Header Fields Too Large");
    return Write(c);
  }
  if (c->in.find("\r\n\r\n") == std::string::npos && c->in.find("\n\n") == std::string::npos)
    return true;
  Answer(c, metrics);
  return Write(c);
}

bool MetricsDoor::Write(Conn* c) {
  while (c->sent < c->out.size()) {
    const ssize_t w =
        send(c->fd.get(), c->out.data() + c->sent, c->out.size() - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c->sent += static_cast<size_t>(w);
  }
  shutdown(c->fd.get(), SHUT_WR);
  return false;  // answered: closed
}

void MetricsDoor::OnPoll(const pollfd* fds, size_t n, double now,
                         const std::function<std::string()>& metrics) {
  // Match by descriptor: the list changes while it is served.
  std::vector<int> ready;
  bool accept = false;
  for (size_t i = 0; i < n; ++i) {
    if (!fds[i].revents) continue;
    if (fds[i].fd == listener_.get()) accept = true;
    else ready.push_back(fds[i].fd);
  }
  for (size_t i = 0; i < conns_.size();) {
    Conn* c = conns_[i].get();
    bool keep = true;
    for (int fd : ready)
      if (fd == c->fd.get()) keep = c->answering ? Write(c) : Read(c, metrics);
    if (keep) ++i;
    else conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  if (accept) Accept(now);
}

double MetricsDoor::NextDeadline() const {
  double next = std::numeric_limits<double>::infinity();
  for (const auto& c : conns_) next = std::min(next, c->since + kConnectionS);
  return next;
}

void MetricsDoor::OnTimer(double now) {
  for (size_t i = 0; i < conns_.size();) {
    if (now >= conns_[i]->since + kConnectionS) {
      conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(i));
      ++given_up_;
    } else {
      ++i;
    }
  }
}

}  // namespace aml
