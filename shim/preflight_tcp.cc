#include "shim/preflight_tcp.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstdio>
#include <sstream>
#include <thread>
#include <vector>

#include "ib/socket_iface.h"
#include "shim/host_port.h"
#include "shim/log.h"
#include "shim/tcp.h"

namespace aml {
namespace {

constexpr char kHello[] = "aml-shim-preflight-1";
constexpr size_t kMaxFrame = 4096;


std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Rank 0: collect one hello per rank until all arrived or the deadline, then
// answer every connected rank with the verdict.
class PreflightServer {
 public:
  PreflightServer(Listener l, const TcpPreflightRequest& req)
      : listener_(std::move(l)), req_(req), arrived_(static_cast<size_t>(req.size), false),
        who_(static_cast<size_t>(req.size)) {}

  void Run(Deadline deadline, const std::string& target) {
    const auto start = Clock::now();
    std::vector<Fd> peers;
    int count = 0;
    while (count < req_.size && Clock::now() < deadline) {
      pollfd p{listener_.fd.get(), POLLIN, 0};
      int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - Clock::now()).count());
      if (poll(&p, 1, ms > 0 ? ms : 0) <= 0) continue;
      int c = accept4(listener_.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) continue;
      Fd peer(c);
      // A hello is one small frame sent right after connecting.
      auto hello = RecvFrame(peer.get(), kMaxFrame, Clock::now() + std::chrono::seconds(5));
      if (!hello.ok()) continue;
      std::istringstream in(*hello);
      std::string magic, host, addr;
      int rank = -1, size = -1;
      in >> magic >> rank >> size >> host >> addr;
      if (magic != kHello) continue;
      if (size != req_.size) {
        mismatch_ += " rank " + std::to_string(rank) + " on " + host + " (" + addr +
                     ") says the job has " + std::to_string(size) + " ranks;";
      } else if (rank >= 0 && rank < req_.size && !arrived_[static_cast<size_t>(rank)]) {
        arrived_[static_cast<size_t>(rank)] = true;
        who_[static_cast<size_t>(rank)] = host + " (" + addr + ")";
        ++count;
      } else if (rank >= 0 && rank < req_.size) {
        mismatch_ += " rank " + std::to_string(rank) + " arrived twice (" +
                     who_[static_cast<size_t>(rank)] + " and " + host + " (" + addr + "));";
      }
      peers.push_back(std::move(peer));
    }
    report_ = MissingRanksReport(arrived_, who_, req_.size, target, SecondsSince(start));
    if (!mismatch_.empty())
      report_ += (report_.empty() ? "preflight tcp: inconsistent ranks:" : " Also:") + mismatch_;
    std::string verdict = report_.empty() ? "ok" : "fail\n" + report_;
    Deadline answer_by = Clock::now() + std::chrono::seconds(5);
    for (const Fd& p : peers) (void)SendFrame(p.get(), verdict, answer_by);
    // Let every peer close first so no TIME_WAIT holds MASTER_PORT.
    for (const Fd& p : peers) AwaitPeerClose(p.get(), answer_by);
  }

  const std::string& report() const { return report_; }

 private:
  Listener listener_;
  TcpPreflightRequest req_;
  std::vector<bool> arrived_;
  std::vector<std::string> who_;
  std::string mismatch_, report_;
};

// Any rank: reach the master (retrying while it is not up yet), say hello,
// wait for the verdict.
Status Client(const TcpPreflightRequest& req, Deadline deadline, const std::string& target,
              bool* said) {
  const auto start = Clock::now();
  std::string last_error, my_addr = "?";
  Fd fd;
  while (Clock::now() < deadline) {
    auto ips = ResolveHost("MASTER_ADDR", req.master_addr);
    if (ips.ok() && !ips->empty()) {
      my_addr = RouteSource(ips->front());
      if (my_addr.empty()) my_addr = "no route";
      auto c = ConnectTcp(ips->front(), req.master_port,
                          std::min(deadline, Clock::now() + std::chrono::seconds(5)));
      if (c.ok()) {
        fd = std::move(*c);
        break;
      }
      last_error = c.error().message;
    } else {
      last_error = ips.ok() ? "no address" : ips.error().message;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::string me = "rank " + std::to_string(req.rank) + " on " + req.host + " (" + my_addr + ")";
  if (!fd.valid())
    return Error{"preflight tcp: " + me + " cannot connect to " + target + ": " + last_error +
                 " (retried for " + Seconds(SecondsSince(start)) + " s)"};
  std::string hello = std::string(kHello) + " " + std::to_string(req.rank) + " " +
                      std::to_string(req.size) + " " + req.host + " " + LocalAddress(fd.get());
  auto sent = SendFrame(fd.get(), hello, deadline + std::chrono::seconds(5));
  // Rank 0 answers when all ranks arrived or its own deadline passed; ranks
  // start at different times, so allow for the skew.
  auto verdict = RecvFrame(fd.get(), kMaxFrame, deadline + req.timeout + std::chrono::seconds(10));
  if (!sent.ok() || !verdict.ok())
    return Error{"preflight tcp: " + me + " connected to " + target +
                 " but got no verdict from rank 0 (" +
                 (sent.ok() ? verdict.error().message : sent.error().message) +
                 "): is MASTER_ADDR rank 0's host?"};
  if (*verdict == "ok") return Ok{};
  if (verdict->rfind("fail\n", 0) == 0) {
    if (said) *said = true;
    return Error{verdict->substr(5)};
  }
  return Error{"preflight tcp: " + me + ": " + target +
               " answered, but not as aml-shim's rank 0: is MASTER_ADDR rank 0's host?"};
}

}  // namespace

std::string MissingRanksReport(const std::vector<bool>& arrived,
                               const std::vector<std::string>& who, int size,
                               const std::string& target, double waited_s) {
  std::vector<int> missing;
  for (int r = 0; r < size; ++r)
    if (!arrived[static_cast<size_t>(r)]) missing.push_back(r);
  if (missing.empty()) return "";
  std::string s = "preflight tcp: " + std::to_string(missing.size()) + " of " +
                  std::to_string(size) + " ranks did not reach " + target + " within " +
                  Seconds(waited_s) + " s: rank";
  if (missing.size() > 1) s += "s";
  for (size_t i = 0; i < missing.size() && i < 16; ++i)
    s += (i ? ", " : " ") + std::to_string(missing[i]);
  if (missing.size() > 16) s += " and " + std::to_string(missing.size() - 16) + " more";
  s += " (each says why on its own host); arrived:";
  int shown = 0;
  for (int r = 0; r < size && shown < 8; ++r)
    if (arrived[static_cast<size_t>(r)]) {
      s += " " + std::to_string(r) + "@" + who[static_cast<size_t>(r)];
      ++shown;
    }
  if (shown == 0) s += " none";
  return s;
}

Status RunTcpPreflight(const TcpPreflightRequest& req, bool* said) {
  if (said) *said = false;
  const std::string target = "MASTER_ADDR:MASTER_PORT=" +
                             JoinHostPort(req.master_addr, req.master_port);
  const Deadline deadline = Clock::now() + req.timeout;
  const Deadline verdict_at = deadline + req.verdict_margin;
  std::unique_ptr<PreflightServer> server;
  std::thread thread;
  if (req.rank == 0) {
    auto l = ListenAny(req.master_port);
    if (!l.ok())
      return Error{"preflight tcp: rank 0 on " + req.host + " cannot listen on MASTER_PORT=" +
                   std::to_string(req.master_port) + ": " + l.error().message};
    server = std::make_unique<PreflightServer>(std::move(*l), req);
    thread = std::thread([&] { server->Run(verdict_at, target); });
  }
  Status mine = Client(req, deadline, target, said);
  if (!thread.joinable()) {
    if (!mine.ok() && !(said && *said)) {
      LogError(mine.error().message);
      if (said) *said = true;  // said already
      std::this_thread::sleep_for(req.linger);
    }
    return mine;
  }
  thread.join();
  if (said) *said = false;
  if (!server->report().empty()) return Error{server->report()};
  return mine;
}

}  // namespace aml
