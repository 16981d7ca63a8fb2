// --metrics-addr HOST:PORT (docs/metrics.md): this shim's metrics over
// HTTP, served from the supervisor's own loop and never blocking it. GET
// /metrics answers Prometheus' text format (prom_text.h); anything else
// gets a short error. Read-only: nothing a client sends changes anything.
// Bounded against a slow or hostile client: kSeats connections (a newcomer
// takes the seat of the one that sent the least, the longest-waiting among
// equals, as the job's own doors do: shim/net/crowded_door.h), a request of
// kMaxRequest bytes, kConnectionS seconds a connection, an answer of
// kMaxAnswer bytes; each connection is closed once answered.
#pragma once

#include <poll.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shim/base/result.h"
#include "shim/net/crowded_door.h"
#include "shim/net/tcp.h"

namespace aml {

struct MetricsAddr {
  std::string host;  // numeric; "" for every address
  int port = 0;
};
// "HOST:PORT", "[V6]:PORT" or ":PORT" (every address); the error names
// --metrics-addr and the value.
Result<MetricsAddr> ParseMetricsAddr(const std::string& value);

class MetricsDoor {
 public:
  static constexpr size_t kSeats = 16;
  static constexpr size_t kMaxRequest = 8 << 10;
  static constexpr double kConnectionS = 5;
  static constexpr size_t kMaxAnswer = 4 << 20;

  // The error names --metrics-addr and the address.
  static Result<std::unique_ptr<MetricsDoor>> Open(const MetricsAddr& addr);

  int port() const { return port_; }
  size_t connections() const { return conns_.size(); }
  size_t served() const { return served_; }
  size_t given_up() const { return given_up_; }  // seats taken for newcomers, or timed out

  // The listener, then each connection (reading, or writing its answer).
  void AddPollFds(std::vector<pollfd>* fds) const;
  // `metrics`: the body of an answer to GET /metrics, asked once per request.
  void OnPoll(const pollfd* fds, size_t n, double now,
              const std::function<std::string()>& metrics);
  // When a connection's time is up (infinity when none is open).
  double NextDeadline() const;
  void OnTimer(double now);

 private:
  struct Conn {
    Fd fd;
    double since = 0;
    std::string in, out;
    size_t sent = 0;
    bool answering = false;
  };
  MetricsDoor(Fd fd, int port) : listener_(std::move(fd)), port_(port) {}
  void Accept(double now);
  // False when the connection is done (to be closed).
  bool Read(Conn* c, const std::function<std::string()>& metrics);
  bool Write(Conn* c);
  void Answer(Conn* c, const std::function<std::string()>& metrics);

  Fd listener_;
  int port_ = 0;
  std::vector<std::unique_ptr<Conn>> conns_;
  size_t served_ = 0, given_up_ = 0;
};

}  // namespace aml
