#include "shim/preflight/preflight.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "shim/base/units.h"
#include "shim/base/host_port.h"
#include "shim/base/log.h"
#include "shim/preflight/hello_gate.h"
#include "shim/preflight/nccl_stage.h"
#include "shim/preflight/nccl_verdict.h"
#include "shim/preflight/node_fan_in.h"
#include "shim/net/tcp.h"
#include "shim/base/text_list.h"

namespace aml {
namespace {

constexpr size_t kMaxFrame = 1 << 20;
// One small frame on a live connection (a hello, a verdict, a result).
constexpr std::chrono::seconds kFrameTimeout{5};
// How far apart the ranks of one job may start: a rank waits this much past
// its own timeout for rank 0's verdict.
constexpr std::chrono::seconds kStartSkew{10};
// Between two attempts to connect to rank 0, which may not listen yet.
constexpr std::chrono::milliseconds kConnectRetryPause{200};

std::string Seconds(double s) { return FormatNumber(s, "%.1f"); }

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Rank 0: collect one hello per rank until all arrived or the deadline; then,
// for the GPU stage, every shim's GPUs, the ids, and the results; answer
// every connected rank with the verdict.
class PreflightServer {
 public:
  PreflightServer(Listener l, const PreflightRequest& req)
      : listener_(std::move(l)), req_(req), gate_(listener_.fd.get(), req.size, req.prover) {}

  void Run(Deadline deadline, const std::string& target) {
    gate_.Run(deadline);
    const std::string flood = gate_.FloodNote();
    // The wait is --preflight-timeout's (rank 0's verdict comes when it ends).
    std::string report = MissingRanksReport(
        gate_.arrived(), gate_.who(), req_.size, target,
        std::chrono::duration<double>(req_.timeout).count());
    const std::string& mismatch = gate_.mismatch();
    if (!mismatch.empty())
      report += (report.empty() ? "preflight tcp: inconsistent ranks:" : " Also:") + mismatch;
    // Every rank got in, but the job's port is being flooded: worth saying.
    if (report.empty() && !flood.empty()) LogWarning("preflight tcp: " + flood);
    if (report.empty() && req_.gpu) {
      GpuStage();
    } else if (report.empty()) {
      PrintAndAnswer(false, {});
    } else {
      std::vector<std::string> lines{report};
      for (const std::string& note : gate_.Notes()) lines.push_back("preflight tcp: " + note);
      PrintAndAnswer(true, lines);
    }
    // Let every peer close first so no TIME_WAIT holds MASTER_PORT.
    const Deadline close_by = Clock::now() + kFrameTimeout;
    for (const Fd& p : gate_.connections()) AwaitPeerClose(p.get(), close_by);
  }

  bool failed() const { return failed_; }
  size_t connections() const { return gate_.connections().size(); }
  const std::vector<std::string>& report() const { return report_; }

 private:
  // The report is printed before any rank hears the verdict: a rank that
  // exits 125 makes mpirun kill the others, rank 0 included.
  void PrintAndAnswer(bool failed, const std::vector<std::string>& lines) {
    failed_ = failed;
    report_ = lines;
    if (failed)
      for (const auto& l : lines) LogError(l);
    AnswerAll((failed ? "fail\n" : lines.empty() ? "ok" : "ok\n") + JoinLines(lines));
  }

  void AnswerAll(const std::string& verdict) {
    const Deadline by = Clock::now() + kFrameTimeout;
    for (const Fd& p : gate_.connections()) (void)SendFrame(p.get(), verdict, by);
  }

  void Fail(const std::vector<std::string>& lines) { PrintAndAnswer(true, lines); }

  // The connection rank r said hello on: its own in the GPU stage, which
  // every shim joins on its own (node_fan_in.h gathers only for tcp).
  int Conn(size_t r) const {
    const int c = gate_.connection_of_rank()[r];
    return c < 0 ? -1 : gate_.connections()[static_cast<size_t>(c)].get();
  }

  // Every shim reports its GPUs; rank 0 hands out the ids; every shim runs
  // the all-reduces and reports; rank 0 judges.
  void GpuStage() {
    const size_t n = static_cast<size_t>(req_.size);
    std::vector<GpuHello> hellos(n);
    Deadline by = Clock::now() + req_.timeout + req_.verdict_margin;
    for (size_t r = 0; r < n; ++r) {
      auto frame = RecvFrame(Conn(r), kMaxFrame, by);
      auto hello = frame.ok() ? DecodeGpuHello(*frame) : Result<GpuHello>(frame.error());
      if (hello.ok()) {
        hellos[r] = std::move(*hello);
      } else {
        hellos[r].ready.error = "no word on its GPUs within " +
                                Seconds(std::chrono::duration<double>(req_.timeout).count()) +
                                " s (" + hello.error().message + ")";
      }
    }
    auto go = PlanNcclIds(hellos, gate_.hosts());
    if (!go.ok()) return Fail(SplitLines(go.error().message));
    const Deadline send_by = Clock::now() + kFrameTimeout;
    for (size_t r = 0; r < n; ++r)
      (void)SendFrame(Conn(r), EncodeGo((*go)[r]), send_by);
    std::vector<ShimOutcome> outcomes(n);
    for (size_t r = 0; r < n; ++r) {
      outcomes[r].rank = static_cast<int>(r);
      outcomes[r].host = gate_.hosts()[r];
      outcomes[r].node = hellos[r].node;
      outcomes[r].gpus = hellos[r].gpus;
    }
    CollectResults(Clock::now() + req_.timeout + req_.verdict_margin, &outcomes);
    NcclVerdict v = JudgeAllReduce(outcomes, req_.bytes, req_.min_busbw);
    if (v.failed) return Fail(v.lines);
    PrintAndAnswer(false, v.lines);
  }

  // Results as they arrive, until all are in, the deadline, or the first
  // failure: then the ranks still running are stopped (they would only
  // hang in a collective that the failed rank left).
  void CollectResults(Deadline by, std::vector<ShimOutcome>* outcomes) {
    const size_t n = static_cast<size_t>(req_.size);
    std::vector<bool> done(n, false);
    size_t left = n;
    bool failure = false;
    // After a failure, one more look (no waiting) for results already sent.
    bool last_look = false;
    while (left > 0 && (!failure || !last_look) && (failure || Clock::now() < by)) {
      last_look = failure;
      std::vector<pollfd> fds;
      std::vector<size_t> ranks;
      for (size_t r = 0; r < n; ++r)
        if (!done[r]) {
          fds.push_back({Conn(r), POLLIN, 0});
          ranks.push_back(r);
        }
      if (poll(fds.data(), fds.size(), failure ? 0 : PollTimeoutMs(by)) <= 0) continue;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const size_t r = ranks[i];
        ShimOutcome& o = (*outcomes)[r];
        done[r] = true;
        --left;
        auto frame = RecvFrame(Conn(r), kMaxFrame, Clock::now() + kFrameTimeout);
        auto result = frame.ok() ? DecodeResult(*frame) : Result<WorkerResult>(frame.error());
        if (!result.ok()) {
          o.error = "lost its connection to rank 0 (" + result.error().message + ")";
        } else {
          o.ok = result->ok;
          o.error = result->error;
          o.node_s = result->node_s;
          o.world_s = result->world_s;
        }
        // A timeout is not the first failure to stop at: the ranks of a hung
        // collective all time out together, and the report should list all.
        failure |= !o.ok && !(result.ok() && result->timed_out);
      }
    }
    for (size_t r = 0; r < n; ++r) {
      if (done[r]) continue;
      ShimOutcome& o = (*outcomes)[r];
      if (failure) o.finished = false;
      else o.error = "no result within " +
                     Seconds(std::chrono::duration<double>(req_.timeout).count()) + " s";
    }
  }

  Listener listener_;
  PreflightRequest req_;
  HelloGate gate_;  // on listener_
  bool failed_ = false;
  std::vector<std::string> report_;
};

// How long a rank waits for rank 0's verdict after saying hello: rank 0
// answers when all ranks arrived or its own deadline passed; ranks start at
// different times, so allow for the skew (and, for the GPU stage, for the
// others' GPUs to start).
std::chrono::milliseconds VerdictWait(const PreflightRequest& req) {
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(req.timeout + kStartSkew);
  if (req.gpu) wait += req.timeout + req.verdict_margin;
  return wait;
}

// This shim's hello on `fd`, for `ranks`, from `addr`: the answer to the
// door's challenge.
Status SayHello(int fd, const PreflightRequest& req, std::vector<int> ranks, std::string addr,
                Deadline deadline) {
  Hello h;
  h.ranks = std::move(ranks);
  h.size = req.size;
  h.host = req.host;
  h.addr = std::move(addr);
  return SayHelloTo(fd, std::move(h), req.prover, deadline);
}

// Connects to rank 0, retrying until `deadline` (rank 0 may not listen
// yet); `me` gets this rank's name with its route's source address. The
// error counts the retries from `start`.
Result<Fd> ConnectToRankZero(const PreflightRequest& req, Deadline deadline,
                             const std::string& target, Clock::time_point start,
                             std::string* me) {
  std::string last_error, my_addr = "?";
  Fd fd;
  while (Clock::now() < deadline) {
    auto ips = ResolveHost("MASTER_ADDR", req.master_addr);
    if (ips.ok() && !ips->empty()) {
      my_addr = RouteSource(ips->front());
      if (my_addr.empty()) my_addr = "no route";
      auto c = ConnectTcp(ips->front(), req.master_port,
                          std::min(deadline, Clock::now() + kFrameTimeout));
      if (c.ok()) {
        fd = std::move(*c);
        break;
      }
      last_error = c.error().message;
    } else {
      last_error = ips.ok() ? "no address" : ips.error().message;
    }
    std::this_thread::sleep_for(kConnectRetryPause);
  }
  *me = "rank " + std::to_string(req.rank) + " on " + req.host + " (" + my_addr + ")";
  if (!fd.valid())
    return Error{"preflight tcp: " + *me + " cannot connect to " + target + ": " + last_error +
                 " (retried for " + Seconds(SecondsSince(start)) + " s)"};
  return fd;
}

// Reach the master (retrying while it is not up yet), say hello for `ranks`,
// run the GPU stage when asked: rank 0's verdict frame, or why none came.
// `me` names this rank for messages.
Result<std::string> AskRankZero(const PreflightRequest& req, const std::vector<int>& ranks,
                                Deadline deadline, const std::string& target, std::string* me) {
  const auto start = Clock::now();
  Fd fd;
  std::optional<std::string> gpu_hello;
  Result<std::string> verdict = Error{""};
  // A crowded door (shim/net/crowded_door.h) may close this connection to
  // seat a newcomer before it read the hello: then it is asked again. A
  // connection rank 0 read is never closed without a verdict.
  for (;;) {
    auto connected = ConnectToRankZero(req, deadline, target, start, me);
    if (!connected.ok()) return connected.error();
    fd = std::move(*connected);
    Status sent = SayHello(fd.get(), req, ranks, LocalAddress(fd.get()), deadline + kFrameTimeout);
    if (sent.ok() && req.gpu) {
      if (!gpu_hello) gpu_hello = EncodeGpuHello(req.gpu->Ready(Clock::now() + req.timeout));
      sent = SendFrame(fd.get(), *gpu_hello, Clock::now() + kFrameTimeout);
    }
    verdict = sent.ok() ? RecvFrame(fd.get(), kMaxFrame, deadline + VerdictWait(req))
                        : Result<std::string>(sent.error());
    if (verdict.ok() || !IsPeerReset(verdict.error()) || Clock::now() >= deadline) break;
    LogVerbose("preflight: rank 0 closed this connection before reading its hello (a crowded "
               "door); connecting again");
    std::this_thread::sleep_for(kConnectRetryPause);
  }
  auto no_verdict = [&](const std::string& why) {
    return Error{"preflight: " + *me + " connected to " + target +
                 " but got no verdict from rank 0 (" + why + "): is MASTER_ADDR rank 0's host?"};
  };
  if (!verdict.ok()) return no_verdict(verdict.error().message);
  if (req.gpu && verdict->rfind("go\n", 0) == 0) {
    auto go = DecodeGo(*verdict);
    WorkerResult result;
    bool interrupted = false;
    if (go.ok()) result = req.gpu->Run(*go, Clock::now() + req.timeout, fd.get(), &interrupted);
    else result.error = "bad ids from rank 0: " + go.error().message;
    // Interrupted: rank 0's verdict is waiting on the socket already.
    Status sent = interrupted ? Status(Ok{})
                              : SendFrame(fd.get(), EncodeResult(result),
                                          Clock::now() + kFrameTimeout);
    verdict = sent.ok() ? RecvFrame(fd.get(), kMaxFrame,
                                    Clock::now() + req.timeout + req.verdict_margin +
                                        kStartSkew)
                        : Result<std::string>(sent.error());
    if (!verdict.ok()) return no_verdict(verdict.error().message);
  }
  return verdict;
}

// Rank 0's verdict as this rank's outcome.
Status Interpret(const std::string& verdict, const std::string& me, const std::string& target,
                 bool* said) {
  if (verdict == "ok" || verdict.rfind("ok\n", 0) == 0) return Ok{};
  if (verdict.rfind("fail\n", 0) == 0) {
    if (said) *said = true;
    return Error{verdict.substr(5)};
  }
  return Error{"preflight: " + me + ": " + target +
               " answered, but not as aml-shim's rank 0: is MASTER_ADDR rank 0's host?"};
}

// Any rank. With the node fan-in (node_fan_in.h), a member hears rank 0's
// verdict from its node's leader, and a leader speaks for its node.
Status Client(const PreflightRequest& req, Deadline deadline, const std::string& target,
              bool* said) {
  const bool fan_in = !req.gpu && req.local_size > 1 &&
                      static_cast<size_t>(req.local_size) <= kMaxHelloRanks;
  // Members look for their leader, and leaders wait for their members, for
  // at most half the time: then each goes to rank 0 with what it has.
  const Deadline join_until = Clock::now() + (deadline - Clock::now()) / 2;
  const std::string name = fan_in ? NodeSocketName(req.master_addr, req.master_port, req.size,
                                                   req.token, req.host)
                                  : "";
  std::string me = "rank " + std::to_string(req.rank) + " on " + req.host;
  // A would-be leader that finds the name held joins as a member.
  std::unique_ptr<NodeLeader> leader;
  if (fan_in && req.local_rank == 0) leader = NodeLeader::Start(name, req.size, req.prover);
  if (fan_in && !leader) {
    auto joined = JoinLeader(name, join_until);
    if (!joined.ok()) LogVerbose("preflight: " + joined.error().message + "; asking rank 0 itself");
    Fd to_leader = joined.ok() ? std::move(*joined) : Fd();
    if (to_leader.valid() && SayHello(to_leader.get(), req, {req.rank}, "local",
                                      Clock::now() + kFrameTimeout).ok()) {
      auto verdict = RecvFrame(to_leader.get(), kMaxFrame, deadline + VerdictWait(req));
      if (verdict.ok()) return Interpret(*verdict, me, target, said);
    }
    // No leader, or it left before rank 0's verdict: ask rank 0 itself.
  }
  std::vector<int> ranks;
  if (leader) ranks = leader->Gather(req.local_size - 1, join_until);
  ranks.insert(std::lower_bound(ranks.begin(), ranks.end(), req.rank), req.rank);
  auto verdict = AskRankZero(req, ranks, deadline, target, &me);
  if (leader) {
    // Members print rank 0's report as other ranks do (verbose only), and
    // a leader's own failure is printed by the leader.
    leader->Relay(verdict.ok() ? *verdict : "fail\n" + verdict.error().message,
                  Clock::now() + kFrameTimeout);
  }
  if (!verdict.ok()) return verdict.error();
  return Interpret(*verdict, me, target, said);
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
                  Seconds(waited_s) + " s: " + RankList(missing) + " (each says why on its own host); arrived:";
  int shown = 0;
  for (int r = 0; r < size && shown < 8; ++r)
    if (arrived[static_cast<size_t>(r)]) {
      s += " " + std::to_string(r) + "@" + who[static_cast<size_t>(r)];
      ++shown;
    }
  if (shown == 0) s += " none";
  return s;
}

Result<PreflightOutcome> RunPreflight(const PreflightRequest& req, bool* said) {
  if (said) *said = false;
  const std::string target = "MASTER_ADDR:MASTER_PORT=" +
                             JoinHostPort(req.master_addr, req.master_port);
  // Rank 0 gives its verdict when --preflight-timeout ends; the others stop
  // trying to connect a margin before that, so that a rank that connects at
  // its last moment still counts.
  const auto margin = std::min<std::chrono::milliseconds>(req.verdict_margin, req.timeout / 4);
  const Deadline verdict_at = Clock::now() + req.timeout;
  const Deadline deadline = verdict_at - margin;
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
      for (const std::string& line : SplitLines(mine.error().message)) LogError(line);
      if (said) *said = true;  // said already
      // (Rank 0 may have started later: its own verdict is due that much
      // later; as long again as the timeout is what a launch's skew gets.)
      const auto slack = std::min(req.linger, req.timeout);
      std::this_thread::sleep_until(std::min(verdict_at + slack, Clock::now() + req.linger));
    }
    if (!mine.ok()) return mine.error();
    return PreflightOutcome{};
  }
  thread.join();
  // Rank 0's server printed its report.
  if (said) *said = server->failed();
  if (server->failed()) return Error{JoinLines(server->report())};
  if (!mine.ok()) return mine.error();
  return PreflightOutcome{server->report(), server->connections()};
}

}  // namespace aml
