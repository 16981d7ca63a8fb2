#include "shim/control/plane.h"

#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "shim/base/clock.h"
#include "shim/base/proof.h"
#include "shim/net/test_port.h"

namespace aml {
namespace {

double Mono() { return MonotonicSeconds(); }

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";

int FreePort() { return ReservedTestPort(); }

// N shims on loopback, one child rank each, shim r on host "h<r>"; each
// joins from its own thread, as separate processes would.
struct Cluster {
  std::vector<std::unique_ptr<ControlPlane>> planes;
  std::vector<std::vector<LinkOrder>> orders;

  static PlaneConfig Config(int rank, int n, int port) {
    PlaneConfig c;
    c.rank = rank;
    c.size = n;
    c.node = rank;
    c.host = "h" + std::to_string(rank);
    c.ranks = {rank};
    c.world_ranks = n;
    c.master_addr = "127.0.0.1";
    c.master_port = port;
    c.prover = Prover(kToken, nullptr);
    c.join_timeout_s = 20;
    c.run_id = "job-1";
    c.fanout = 2;
    return c;
  }

  explicit Cluster(int n, std::optional<double> hang = std::nullopt,
                   std::function<void(int port)> meanwhile = nullptr, int max_restarts = 0,
                   double startup_s = 30) {
    const int port = FreePort();
    planes.resize(static_cast<size_t>(n));
    orders.resize(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    auto start = [&](int r) {
      threads.emplace_back([&, r] {
        PlaneConfig c = Config(r, n, port);
        c.hang_timeout_s = hang;
        c.max_restarts = max_restarts;
        c.startup_s = startup_s;
        auto p = ControlPlane::Join(c);
        if (p.ok()) planes[static_cast<size_t>(r)] = std::move(*p);
        else ADD_FAILURE() << "rank " << r << ": " << p.error().message;
      });
    };
    // Rank 0 first: it waits at its door for the others (and whatever
    // `meanwhile` sends it) before they start.
    start(0);
    if (meanwhile) meanwhile(port);
    for (int r = 1; r < n; ++r) start(r);
    for (auto& t : threads) t.join();
  }

  // Serves every plane's descriptors and timers until `done` or `seconds`.
  bool Pump(double seconds, const std::function<bool()>& done) {
    const double until = Mono() + seconds;
    while (Mono() < until) {
      if (done()) return true;
      std::vector<pollfd> fds;
      std::vector<size_t> first(planes.size() + 1, 0);
      double next = Mono() + 0.05;
      for (size_t i = 0; i < planes.size(); ++i) {
        first[i] = fds.size();
        if (planes[i]) {
          planes[i]->AddPollFds(&fds);
          next = std::min(next, planes[i]->NextDeadline(Mono()));
        }
      }
      first[planes.size()] = fds.size();
      poll(fds.data(), fds.size(), static_cast<int>(std::max(0.0, next - Mono()) * 1000) + 1);
      for (size_t i = 0; i < planes.size(); ++i) {
        if (!planes[i]) continue;
        planes[i]->OnPoll(fds.data() + first[i], first[i + 1] - first[i], Mono());
        planes[i]->OnTimer(Mono());
        while (auto o = planes[i]->TakeOrder()) orders[i].push_back(std::move(*o));
      }
    }
    return done();
  }

  bool AllStopped() const {
    for (size_t i = 0; i < planes.size(); ++i)
      if (planes[i] && (orders[i].empty() || !std::holds_alternative<StopOrder>(orders[i].back())))
        return false;
    return true;
  }
};

// recv of one byte after waiting up to `seconds` for the socket to answer:
// 0 when the peer closed it.
ssize_t RecvWithin(int fd, int seconds) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, seconds * 1000) <= 0) return -2;
  char b;
  return recv(fd, &b, 1, 0);
}

// The challenge a door sends as it accepts (its nonce), or "".
std::string ReadChallenge(int fd) {
  auto frame = RecvFrame(fd, 4096, Clock::now() + std::chrono::seconds(5));
  if (!frame.ok()) return "";
  auto m = Msg::Decode(*frame);
  return m.ok() && m->type() == "challenge" ? m->Str("n") : "";
}

// A join for rank 1 with `proof` on a new connection to rank 0's door; its
// answer ("" when none), and the connection's challenge.
std::string TryJoin(int port, const std::function<std::string(const std::string&)>& proof,
                    std::string* challenge = nullptr) {
  auto fd = ConnectTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(1));
  if (!fd.ok()) return "";
  if (!SendFrame(fd->get(), Msg("hi").Encode(), Clock::now() + std::chrono::seconds(1)).ok())
    return "";
  const std::string n = ReadChallenge(fd->get());
  if (challenge) *challenge = n;
  if (n.empty()) return "";
  Msg join("join");
  join.Set("v", std::string("aml-shim-control-3")).Set("rank", 1).Set("size", 3);
  join.Set("port", 9).Set("nonce", std::string("c1")).Set("proof", proof(n));
  if (!SendFrame(fd->get(), join.Encode(), Clock::now() + std::chrono::seconds(1)).ok()) return "";
  auto reply = RecvFrame(fd->get(), 4096, Clock::now() + std::chrono::seconds(5));
  return reply.ok() ? *reply : "";
}

LocalFailure Failure(int rank, int code) {
  LocalFailure f;
  f.rank = rank;
  f.exit_code = code;
  f.status = "exited with status " + std::to_string(code);
  f.wall_time = 1000 + rank;
  f.summary = "aml-shim: SUMMARY of rank " + std::to_string(rank) + "\n";
  f.failure_json = "{\"run\":\"job-1\",\"rank\":" + std::to_string(rank) + "}";
  return f;
}

TEST(ControlPlane, AFailureAnywhereStopsEveryShimAndRankZeroPrintsIt) {
  Cluster c(4);
  c.planes[3]->OnChildFailed(Failure(3, 7));
  ASSERT_TRUE(c.Pump(10, [&] { return c.AllStopped(); }));
  const StopOrder& root = std::get<StopOrder>(c.orders[0].back());
  EXPECT_EQ(root.exit_code, 7);
  EXPECT_EQ(root.message, "aml-shim: SUMMARY of rank 3\n");
  EXPECT_EQ(root.failure_json, "{\"run\":\"job-1\",\"rank\":3}");
  EXPECT_EQ(std::get<StopOrder>(c.orders[1].back()).message,
            "aml-shim: stopped: rank 3 on node 3 (host h3) failed first (exited with status 7)\n");
  EXPECT_EQ(std::get<StopOrder>(c.orders[1].back()).exit_code, 7);
  EXPECT_EQ(std::get<StopOrder>(c.orders[3].back()).message,
            "aml-shim: rank 3 failed (exited with status 7): the job's first failure; rank 0's "
            "shim (on h0) printed its summary\n");
  EXPECT_FALSE(c.planes[3]->PrintsOwnFailure());
  EXPECT_TRUE(c.planes[0]->PrintsOwnFailure());
  // Every shim ended its ranks at once (the halt, as rank 0 heard of the
  // failure), then got the verdict: two orders each.
  for (const auto& o : c.orders) {
    ASSERT_EQ(o.size(), 2u);
    EXPECT_TRUE(std::holds_alternative<EndAttemptOrder>(o[0]));
  }
}

TEST(ControlPlane, TheEarliestFailureInTheWindowIsTheFirst) {
  Cluster c(3);
  LocalFailure later = Failure(1, 3), earlier = Failure(2, 9);
  later.wall_time = 1795438158.75;  // wall-clock seconds, as nodes report them
  earlier.wall_time = 1795438158.25;  // failed first, reported second
  c.planes[1]->OnChildFailed(later);
  c.planes[2]->OnChildFailed(earlier);
  ASSERT_TRUE(c.Pump(10, [&] { return c.AllStopped(); }));
  EXPECT_EQ(std::get<StopOrder>(c.orders[0].back()).exit_code, 9);
  EXPECT_EQ(std::get<StopOrder>(c.orders[0].back()).message, "aml-shim: SUMMARY of rank 2\n");
}

TEST(ControlPlane, ALostShimEndsTheJobWithin_Seconds) {
  Cluster c(3);
  c.planes[2].reset();  // its shim was SIGKILLed: the kernel closes its links
  ASSERT_TRUE(c.Pump(10, [&] { return c.AllStopped(); }));
  EXPECT_EQ(std::get<StopOrder>(c.orders[0].back()).exit_code, 125);
  EXPECT_NE(std::get<StopOrder>(c.orders[0].back())
                .message.find("the control plane lost rank 2's shim on h2 (closed)"),
            std::string::npos)
      << std::get<StopOrder>(c.orders[0].back()).message;
  EXPECT_NE(std::get<StopOrder>(c.orders[1].back())
                .message.find("stopped: the control plane lost rank 2's shim"),
            std::string::npos);
}

TEST(ControlPlane, AShimStoppedByItsLauncherStopsTheOthersWithItsStatus) {
  Cluster c(4);
  c.planes[2]->OnShimSignalled(15);
  ASSERT_TRUE(c.Pump(10, [&] {
    for (size_t i : {0u, 1u, 3u})
      if (c.orders[i].empty()) return false;
    return true;
  }));
  for (size_t i : {0u, 1u, 3u}) {
    ASSERT_EQ(c.orders[i].size(), 1u);
    EXPECT_EQ(std::get<StopOrder>(c.orders[i][0]).exit_code, 143);
    EXPECT_EQ(std::get<StopOrder>(c.orders[i][0]).message,
              "aml-shim: stopped: rank 2's shim on h2 was stopped by its launcher (SIGTERM)\n");
  }
  EXPECT_TRUE(c.orders[2].empty());  // it stops on its own signal
}

// A shim whose launcher is gone (launch/lifeline.h) says so to the others:
// not "stopped by its launcher", which nobody did.
TEST(ControlPlane, AShimWhoseLauncherIsGoneSaysSoToTheOthers) {
  Cluster c(3);
  c.planes[1]->OnShimSignalled(15, "the launcher (mpirun, pid 4711) is gone");
  ASSERT_TRUE(c.Pump(10, [&] { return !c.orders[0].empty() && !c.orders[2].empty(); }));
  for (size_t i : {0u, 2u}) {
    EXPECT_EQ(std::get<StopOrder>(c.orders[i][0]).exit_code, 143);
    EXPECT_EQ(std::get<StopOrder>(c.orders[i][0]).message,
              "aml-shim: stopped: rank 1's shim on h1 ended its ranks: the launcher (mpirun, pid "
              "4711) is gone\n");
  }
}

TEST(ControlPlane, StrangersAtTheDoorAreRefusedAndTheJobStillJoins) {
  std::string answer;
  Cluster c(3, std::nullopt, [&](int port) {
    // Without the job's proof: refused, and the real shims still join.
    for (int i = 0; i < 100 && answer.empty(); ++i) {
      answer = TryJoin(port, [](const std::string&) { return std::string("forged"); });
      if (answer.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  EXPECT_EQ(answer, "{\"t\":\"refused\",\"why\":\"without this job's proof\"}");
  for (auto& p : c.planes) EXPECT_TRUE(p);
}

// Someone who saw a real join on the network (its challenge and its proof)
// sends it again on a connection of their own: it answers the old challenge,
// not the new one, and is refused.
TEST(ControlPlane, AReplayedJoinIsRefused) {
  std::string seen_challenge, seen_proof, replayed;
  const std::string token = kToken;
  Cluster c(3, std::nullopt, [&](int port) {
    for (int i = 0; i < 100 && seen_challenge.empty(); ++i) {
      // The real rank 1's join, as seen on the wire (a valid proof for its
      // connection's challenge); the stranger then cannot use it...
      TryJoin(port, [&](const std::string& n) {
        seen_proof = ConnectionProof(token, "control-plane-join", ProofDirection::kUp, n, "c1", "1");
        return seen_proof;
      }, &seen_challenge);
      if (seen_challenge.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // ... on a connection of its own.
    std::string again;
    replayed = TryJoin(port, [&](const std::string&) { return seen_proof; }, &again);
    EXPECT_NE(again, seen_challenge);
  });
  EXPECT_EQ(replayed, "{\"t\":\"refused\",\"why\":\"without this job's proof\"}");
  for (auto& p : c.planes) EXPECT_TRUE(p);
}

// An idle stranger is closed after its 5 s, an oversized frame at once, and
// neither keeps the real shims out.
TEST(ControlPlane, IdleAndOversizedStrangersAreClosedAndTheJobStillJoins) {
  Fd idle, big;
  bool big_closed = false;
  Cluster c(3, std::nullopt, [&](int port) {
    for (int i = 0; i < 200 && !idle.valid(); ++i) {
      auto fd = ConnectTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(1));
      if (fd.ok()) idle = std::move(*fd);
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    auto fd = ConnectTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(1));
    ASSERT_TRUE(fd.ok());
    big = std::move(*fd);
    const char head[4] = {0, 0x10, 0, 0};  // 1 MiB: over the 4 KiB a join may be
    ASSERT_EQ(send(big.get(), head, 4, MSG_NOSIGNAL), 4);
    EXPECT_NE(ReadChallenge(big.get()), "");
    big_closed = RecvWithin(big.get(), 5) == 0;  // closed at once, no answer
  });
  EXPECT_TRUE(big_closed);
  for (auto& p : c.planes) EXPECT_TRUE(p);
  // The idle one was closed by rank 0's door (at its 5 s, or when the door
  // closed after everyone joined), after its challenge.
  EXPECT_NE(ReadChallenge(idle.get()), "");
  EXPECT_EQ(RecvWithin(idle.get(), 10), 0);
}

TEST(ControlPlane, ASilentJobIsJudgedHungAndEveryRankIsNamed) {
  Cluster c(3, 1.0);
  ASSERT_TRUE(c.Pump(15, [&] {
    for (auto& o : c.orders)
      if (o.empty()) return false;
    return true;
  }));
  for (auto& o : c.orders) EXPECT_TRUE(std::holds_alternative<CollectStacksOrder>(o[0]));
  for (int r = 0; r < 3; ++r) {
    RankStack s;
    s.rank = r;
    s.signature = r == 1 ? "main (hang.py:18)" : "all_reduce (c10d.py:9) < main (hang.py:20)";
    c.planes[static_cast<size_t>(r)]->OnStacks({s});
  }
  ASSERT_TRUE(c.Pump(10, [&] { return c.AllStopped(); }));
  const StopOrder& root = std::get<StopOrder>(c.orders[0].back());
  EXPECT_EQ(root.exit_code, 124);
  EXPECT_NE(root.message.find("2 ranks (0,2) [nodes 0, 2, hosts h0, h2] in all_reduce"),
            std::string::npos)
      << root.message;
  EXPECT_NE(root.message.find("rank 1 [node 1, host h1] in main (hang.py:18)"), std::string::npos);
  EXPECT_NE(root.failure_json.find("\"hang\""), std::string::npos);
  EXPECT_EQ(std::get<StopOrder>(c.orders[2].back()).exit_code, 124);
  EXPECT_NE(std::get<StopOrder>(c.orders[2].back()).message.find("stopped: the job was hung"),
            std::string::npos);
  // Nothing past is left as a deadline: the supervisor's loop would spin
  // while the shims below end (it did, on the collection's deadline).
  // 20 s on: past the 15 s the collection may take, within the shims'
  // 30 s of silence.
  for (auto& p : c.planes) {
    const double later = Mono() + 20;
    p->OnTimer(later);
    EXPECT_GT(p->NextDeadline(later), later);
  }
}

TEST(ControlPlane, OutputOnOneShimKeepsTheWholeJobAlive) {
  Cluster c(3, 2.0);
  double next = 0;
  c.Pump(5, [&] {
    if (Mono() >= next) {
      c.planes[2]->OnOutput(Mono());  // only one rank prints
      next = Mono() + 0.2;
    }
    return false;
  });
  for (auto& o : c.orders) EXPECT_TRUE(o.empty());
}

TEST(ControlPlane, TheJobEndsWhenEveryShimIsDone) {
  Cluster c(4);
  c.planes[0]->OnChildrenDone(NodeOutcome{});
  c.planes[1]->OnChildrenDone(NodeOutcome{});
  c.Pump(0.5, [] { return false; });
  EXPECT_FALSE(c.planes[0]->MayExit());  // shims 2 and 3 still run
  c.planes[2]->OnChildrenDone(NodeOutcome{});
  c.planes[3]->OnChildrenDone(NodeOutcome{});
  EXPECT_TRUE(c.Pump(10, [&] {
    for (auto& p : c.planes)
      if (!p->MayExit()) return false;
    return true;
  }));
  for (auto& o : c.orders) EXPECT_TRUE(o.empty());
}

template <class O>
bool EveryShimsLastOrderIs(const Cluster& c) {
  for (const auto& o : c.orders)
    if (o.empty() || !std::holds_alternative<O>(o.back())) return false;
  return true;
}

TEST(ControlPlane, ARestartRoundEndsEveryShimThenRestartsThemAllInStep) {
  Cluster c(5, std::nullopt, nullptr, 1);
  NodeOutcome printed;  // every node wrote output long before the failure
  printed.first_output_wall = 500;
  c.planes[3]->OnChildFailed(Failure(3, 7));
  ASSERT_TRUE(c.Pump(10, [&] { return EveryShimsLastOrderIs<EndAttemptOrder>(c); }));
  // Nobody restarts before every shim's ranks ended.
  for (int r = 0; r < 4; ++r) c.planes[static_cast<size_t>(r)]->OnChildrenDone(printed);
  c.Pump(0.5, [] { return false; });
  EXPECT_TRUE(EveryShimsLastOrderIs<EndAttemptOrder>(c));
  for (auto& p : c.planes) EXPECT_FALSE(p->MayExit());
  c.planes[4]->OnChildrenDone(printed);
  ASSERT_TRUE(c.Pump(10, [&] { return EveryShimsLastOrderIs<RestartOrder>(c); }));
  const int port = std::get<RestartOrder>(c.orders[0].back()).master_port;
  EXPECT_GT(port, 0);
  for (auto& o : c.orders) {
    EXPECT_EQ(std::get<RestartOrder>(o.back()).restart, 1);
    EXPECT_EQ(std::get<RestartOrder>(o.back()).master_port, port);
    EXPECT_EQ(std::get<RestartOrder>(o.back()).line.rfind(
                  "aml-shim: restart 1 of 1 after rank 3 failed (exited with "
                  "status 7) (attempt 1 ran ",
                  0),
              0u)
        << std::get<RestartOrder>(o.back()).line;
  }
  // Rank 0 prints the failure's summary (it came from shim 3) before the line.
  EXPECT_EQ(std::get<RestartOrder>(c.orders[0].back()).message, "aml-shim: SUMMARY of rank 3\n");
  EXPECT_FALSE(std::get<RestartOrder>(c.orders[3].back()).print_own_failure);
  // The budget is spent: the next failure stops the job with its status,
  // and rank 0 lists both attempts.
  c.planes[1]->OnChildFailed(Failure(1, 9));
  ASSERT_TRUE(c.Pump(10, [&] { return c.AllStopped(); }));
  for (auto& o : c.orders) EXPECT_EQ(std::get<StopOrder>(o.back()).exit_code, 9);
  EXPECT_EQ(std::get<StopOrder>(c.orders[0].back()).why_not, "--max-restarts 1 spent");
  EXPECT_NE(std::get<StopOrder>(c.orders[0].back())
                .trailer.find("aml-shim: 2 attempts (--max-restarts 1); "
                              "--max-restarts 1 spent:\n"),
            std::string::npos)
      << std::get<StopOrder>(c.orders[0].back()).trailer;
  EXPECT_NE(std::get<StopOrder>(c.orders[0].back()).attempts_json.find("\"attempt\":2"),
            std::string::npos);
}

// A failure before any output is restarted (a quiet job that logs to files);
// the same failure again, still without output, is not: the script cannot
// start.
TEST(ControlPlane, TheSameFailureTwiceWithoutOutputIsNotRestartedAgain) {
  Cluster c(3, std::nullopt, nullptr, 5);
  c.planes[2]->OnChildFailed(Failure(2, 1));
  ASSERT_TRUE(c.Pump(10, [&] { return EveryShimsLastOrderIs<EndAttemptOrder>(c); }));
  for (auto& p : c.planes) p->OnChildrenDone(NodeOutcome{1, 0});  // no output anywhere
  ASSERT_TRUE(c.Pump(10, [&] { return EveryShimsLastOrderIs<RestartOrder>(c); }));
  c.planes[2]->OnChildFailed(Failure(2, 1));
  ASSERT_TRUE(c.Pump(10, [&] { return EveryShimsLastOrderIs<EndAttemptOrder>(c); }));
  for (auto& p : c.planes) p->OnChildrenDone(NodeOutcome{1, 0});
  ASSERT_TRUE(c.Pump(10, [&] { return c.AllStopped(); }));
  for (auto& o : c.orders) EXPECT_EQ(std::get<StopOrder>(o.back()).exit_code, 1);
  EXPECT_NE(std::get<StopOrder>(c.orders[0].back())
                .why_not.find("attempts 1 and 2 both failed with exit status 1 "
                              "without progress"),
            std::string::npos)
      << std::get<StopOrder>(c.orders[0].back()).why_not;
}

// A shim that stops answering (SIGSTOP, a hung node) keeps its sockets open:
// only its silence tells. After start-up, a steady link's allowance is 4
// times its longest recent gap, at least 5 s: found in seconds, not 30.
TEST(ControlPlane, AFrozenShimOfASteadyJobIsFoundInSeconds) {
  Cluster c(3, std::nullopt, nullptr, 0, /*startup_s=*/1);
  c.Pump(3, [] { return false; });  // steady: beats every second
  std::unique_ptr<ControlPlane> frozen = std::move(c.planes[2]);  // served no more
  // Within 12 s (the old rule waited 30 s of silence).
  ASSERT_TRUE(c.Pump(12, [&] {
    return !c.orders[0].empty() && std::holds_alternative<StopOrder>(c.orders[0].back());
  }));
  EXPECT_EQ(std::get<StopOrder>(c.orders[0].back()).exit_code, 125);
  EXPECT_NE(std::get<StopOrder>(c.orders[0].back())
                .message.find("the control plane lost rank 2's shim on h2 (silent "
                              "for "),
            std::string::npos)
      << std::get<StopOrder>(c.orders[0].back()).message;
}

// At start-up every link is given 30 s: thousands of shims starting their
// ranks on a few cores beat late, and that is no loss.
TEST(ControlPlane, AtStartUpASlowShimIsNotLost) {
  Cluster c(3, std::nullopt, nullptr, 0, /*startup_s=*/30);
  std::unique_ptr<ControlPlane> slow = std::move(c.planes[2]);
  c.Pump(8, [] { return false; });  // 8 s without a word from shim 2
  c.planes[2] = std::move(slow);
  c.Pump(2, [] { return false; });
  for (const auto& o : c.orders) EXPECT_TRUE(o.empty());
}

// A shim whose parent the tree lost (silent: frozen) lets its link go:
// kept, a link whose peer closed later (an old root woken, stepping down)
// stayed readable and unread, and the shim spun on it, a core busy for the
// rest of the job (the new root's, in tests/e2e/test_busy_root.py).
TEST(ControlPlane, AParentFoundLostIsLetGoAndNotPolledAgain) {
  Cluster c(3, std::nullopt, nullptr, 0, /*startup_s=*/1);
  c.Pump(3, [] { return false; });
  std::unique_ptr<ControlPlane> frozen = std::move(c.planes[0]);  // served no more
  ASSERT_TRUE(c.Pump(15, [&] { return !c.orders[1].empty() && !c.orders[2].empty(); }));
  frozen.reset();  // it wakes and goes: its links close
  c.Pump(1, [] { return false; });
  for (size_t i : {1u, 2u}) {
    std::vector<pollfd> fds;
    c.planes[i]->AddPollFds(&fds);
    ASSERT_GE(poll(fds.data(), fds.size(), 0), 0);
    int ready = 0;
    for (const pollfd& f : fds) ready += (f.revents & (POLLIN | POLLHUP | POLLERR)) ? 1 : 0;
    EXPECT_EQ(ready, 0) << "shim " << i << " polls a descriptor that is ready and never read";
  }
}

TEST(ControlPlane, AShimThatDiesDuringARestartRoundEndsTheJob) {
  Cluster c(3, std::nullopt, nullptr, 1);
  c.planes[1]->OnChildFailed(Failure(1, 7));
  ASSERT_TRUE(c.Pump(10, [&] { return EveryShimsLastOrderIs<EndAttemptOrder>(c); }));
  c.planes[2].reset();  // its shim is killed
  ASSERT_TRUE(c.Pump(10, [&] {
    return !c.orders[0].empty() && std::holds_alternative<StopOrder>(c.orders[0].back());
  }));
  EXPECT_EQ(std::get<StopOrder>(c.orders[0].back()).exit_code, 125);
}

}  // namespace
}  // namespace aml
