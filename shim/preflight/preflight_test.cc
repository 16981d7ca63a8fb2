#include "shim/preflight/preflight.h"

#include <gtest/gtest.h>

#include <poll.h>

#include <functional>
#include <memory>
#include <thread>

#include "shim/preflight/nccl_stage.h"
#include "shim/net/tcp.h"
#include "shim/net/test_port.h"

namespace aml {
namespace {

int FreePort() { return ReservedTestPort(); }

// Runs the ranks in `present` as threads; `adjust` may add to each request.
std::vector<Result<PreflightOutcome>> RunRanks(
    int size, const std::vector<int>& present, int port, std::chrono::milliseconds timeout,
    const std::function<void(PreflightRequest&)>& adjust = {}) {
  std::vector<Result<PreflightOutcome>> out(static_cast<size_t>(size), Error{"not run"});
  std::vector<std::thread> threads;
  for (int r : present)
    threads.emplace_back([&, r] {
      PreflightRequest req;
      req.rank = r;
      req.size = size;
      req.master_addr = "127.0.0.1";
      req.master_port = port;
      req.host = "host" + std::to_string(r);
      req.timeout = timeout;
      req.verdict_margin = std::chrono::milliseconds(200);
      req.linger = std::chrono::milliseconds(0);
      if (adjust) adjust(req);
      out[static_cast<size_t>(r)] = RunPreflight(req);
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(TcpPreflight, AllRanksArriveAndThePortIsFreeAfterwards) {
  int port = FreePort();
  auto res = RunRanks(4, {0, 1, 2, 3}, port, std::chrono::seconds(20));
  for (const auto& s : res) EXPECT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(ListenAny(port).ok());
}

TEST(TcpPreflight, AMissingRankFailsEveryRankThatIsThere) {
  int port = FreePort();
  auto res = RunRanks(3, {0, 1}, port, std::chrono::milliseconds(800));
  ASSERT_FALSE(res[0].ok());
  const std::string& m = res[0].error().message;
  EXPECT_NE(m.find("1 of 3 ranks did not reach MASTER_ADDR:MASTER_PORT=127.0.0.1:" +
                   std::to_string(port)),
            std::string::npos) << m;
  EXPECT_NE(m.find(": rank 2 (each says why on its own host)"), std::string::npos) << m;
  ASSERT_FALSE(res[1].ok());
  EXPECT_EQ(res[1].error().message, m);
}

TEST(TcpPreflight, NoListenerNamesTheRankItsHostAndTheTarget) {
  int port = FreePort();
  auto res = RunRanks(2, {1}, port, std::chrono::milliseconds(500));
  ASSERT_FALSE(res[1].ok());
  const std::string& m = res[1].error().message;
  EXPECT_EQ(m.rfind("preflight tcp: rank 1 on host1 (127.0.0.1) cannot connect to "
                    "MASTER_ADDR:MASTER_PORT=127.0.0.1:" + std::to_string(port) +
                    ": 127.0.0.1:" + std::to_string(port) + ": Connection refused", 0),
            0u) << m;
}

TEST(TcpPreflight, BusyMasterPortFailsRankZeroAtOnce) {
  auto busy = ListenAny(0);
  ASSERT_TRUE(busy.ok());
  PreflightRequest req;
  req.master_addr = "127.0.0.1";
  req.master_port = busy->port;
  req.size = 2;
  req.host = "h0";
  auto s = RunPreflight(req);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("rank 0 on h0 cannot listen on MASTER_PORT=" +
                                   std::to_string(busy->port)),
            std::string::npos) << s.error().message;
}

// Ranks on `hosts` (rank r on hosts[r]); local ranks in rank order per host.
std::function<void(PreflightRequest&)> OnHosts(std::vector<std::string> hosts) {
  return [hosts](PreflightRequest& req) {
    req.host = hosts[static_cast<size_t>(req.rank)];
    req.local_rank = req.local_size = 0;
    for (size_t r = 0; r < hosts.size(); ++r) {
      if (hosts[r] != req.host) continue;
      if (static_cast<int>(r) < req.rank) ++req.local_rank;
      ++req.local_size;
    }
  };
}

TEST(TcpPreflight, EachNodeSpeaksToRankZeroOnceForAllItsRanks) {
  auto res = RunRanks(6, {0, 1, 2, 3, 4, 5}, FreePort(), std::chrono::seconds(20),
                      OnHosts({"a", "b", "a", "b", "a", "b"}));
  for (const auto& s : res) ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(res[0]->connections, 2u);
}

TEST(TcpPreflight, AMemberMissingFromItsNodeIsNamed) {
  int port = FreePort();
  auto res = RunRanks(4, {0, 1, 3}, port, std::chrono::milliseconds(1500),
                      OnHosts({"a", "a", "a", "b"}));
  for (int r : {0, 1, 3}) {
    ASSERT_FALSE(res[static_cast<size_t>(r)].ok());
    EXPECT_EQ(res[static_cast<size_t>(r)].error().message, res[0].error().message);
  }
  EXPECT_NE(res[0].error().message.find("1 of 4 ranks did not reach"), std::string::npos)
      << res[0].error().message;
  EXPECT_NE(res[0].error().message.find(": rank 2 (each says why"), std::string::npos)
      << res[0].error().message;
}

// Without their node's leader, members go to rank 0 themselves: only the
// leader is reported missing.
TEST(TcpPreflight, MembersWithoutALeaderReachRankZeroThemselves) {
  auto res = RunRanks(4, {0, 2, 3}, FreePort(), std::chrono::milliseconds(1500),
                      OnHosts({"a", "b", "b", "b"}));
  ASSERT_FALSE(res[0].ok());
  EXPECT_NE(res[0].error().message.find("1 of 4 ranks did not reach"), std::string::npos)
      << res[0].error().message;
  EXPECT_NE(res[0].error().message.find(": rank 1 (each says why"), std::string::npos)
      << res[0].error().message;
}

// Wrong local ranks (two shims that both think they lead a node) cost only
// connections, never a rank.
TEST(TcpPreflight, TwoWouldBeLeadersOnOneNodeStillPass) {
  auto res = RunRanks(4, {0, 1, 2, 3}, FreePort(), std::chrono::seconds(20),
                      [](PreflightRequest& req) {
                        req.host = "a";
                        req.local_rank = req.rank % 2;
                        req.local_size = 4;
                      });
  for (const auto& s : res) ASSERT_TRUE(s.ok()) << s.error().message;
}

TEST(TcpPreflight, ReportNamesArrivedHostsAndCapsTheList) {
  std::vector<bool> arrived(20, false);
  std::vector<std::string> who(20);
  arrived[0] = true;
  who[0] = "n1 (198.18.0.1)";
  std::string r = MissingRanksReport(arrived, who, 20, "X:1", 3);
  EXPECT_NE(r.find("19 of 20 ranks did not reach X:1 within 3.0 s: ranks 1, 2"), std::string::npos) << r;
  EXPECT_NE(r.find("16 and 3 more"), std::string::npos) << r;
  EXPECT_NE(r.find("arrived: 0@n1 (198.18.0.1)"), std::string::npos) << r;
  EXPECT_EQ(MissingRanksReport({true}, {"a"}, 1, "X:1", 0), "");
}


// A GPU stage without GPUs: rank r sits on node r / 2 with one GPU; node
// leaders make "n<node>", rank 0 also "w". Run checks the ids it was given.
class FakeGpus : public GpuPreflight {
 public:
  FakeGpus(int rank, bool ready, bool fail_run, double node_s)
      : rank_(rank), ready_(ready), fail_run_(fail_run), node_s_(node_s) {}
  GpuHello Ready(Deadline) override {
    GpuHello h;
    h.node = rank_ / 2;
    h.gpus = 1;
    h.ready.ok = ready_;
    h.ready.nccl_version = 22809;
    if (!ready_) h.ready.error = "no GPU here";
    if (rank_ % 2 == 0) h.ready.node_id = "n" + std::to_string(rank_ / 2);
    if (rank_ == 0) h.ready.world_id = "w";
    return h;
  }
  WorkerResult Run(const WorkerGo& go, Deadline deadline, int interrupt_fd,
                   bool* interrupted) override {
    ran = true;
    got = go;
    WorkerResult r;
    if (fail_run_) {
      r.error = "wrong result on GPU 0";
      return r;
    }
    if (node_s_ < 0) {  // hangs like a rank left in a collective
      pollfd p{interrupt_fd, POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       deadline - Clock::now()).count()));
      *interrupted = p.revents != 0;
      r.error = "stopped";
      return r;
    }
    r.ok = true;
    r.node_s = node_s_;
    r.world_s = 2 * node_s_;
    return r;
  }
  bool ran = false;
  WorkerGo got;

 private:
  int rank_;
  bool ready_, fail_run_;
  double node_s_;
};

struct GpuRun {
  std::vector<Result<PreflightOutcome>> out;
  std::vector<std::unique_ptr<FakeGpus>> gpus;
};

GpuRun RunGpuRanks(int size, int not_ready, int fails, int hangs) {
  GpuRun run;
  for (int r = 0; r < size; ++r)
    run.gpus.push_back(std::make_unique<FakeGpus>(r, r != not_ready, r == fails,
                                                  r == hangs ? -1 : 0.001 * (r + 1)));
  std::vector<int> all(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) all[static_cast<size_t>(r)] = r;
  run.out = RunRanks(size, all, FreePort(), std::chrono::seconds(20), [&](PreflightRequest& req) {
    req.gpu = run.gpus[static_cast<size_t>(req.rank)].get();
    req.bytes = 1 << 20;
  });
  return run;
}

TEST(GpuPreflight, RankZeroHandsOutIdsAndReportsEveryNodeAndTheJob) {
  GpuRun run = RunGpuRanks(4, -1, -1, -1);
  for (const auto& o : run.out) ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(run.gpus[3]->got.node_id, "n1");
  EXPECT_EQ(run.gpus[3]->got.world_id, "w");
  EXPECT_EQ(run.gpus[0]->got.node_id, "n0");
  const auto& report = run.out[0]->report;
  ASSERT_EQ(report.size(), 3u);
  EXPECT_NE(report[0].find("node 0 (host0,host1): 2 GPUs, all-reduce of 1 MiB in 2.000 ms"),
            std::string::npos) << report[0];
  EXPECT_NE(report[1].find("node 1 (host2,host3): 2 GPUs, all-reduce of 1 MiB in 4.000 ms"),
            std::string::npos) << report[1];
  EXPECT_NE(report[2].find("all 2 nodes, 4 GPUs, all-reduce of 1 MiB in 8.000 ms"),
            std::string::npos) << report[2];
  EXPECT_TRUE(run.out[1]->report.empty());  // only rank 0 reports
}

TEST(GpuPreflight, ARankWithoutGpusFailsEveryRankBeforeAnyAllReduce) {
  GpuRun run = RunGpuRanks(4, 2, -1, -1);
  for (size_t r = 0; r < 4; ++r) {
    ASSERT_FALSE(run.out[r].ok());
    EXPECT_EQ(run.out[r].error().message, "preflight nccl: rank 2 on host2: no GPU here");
    EXPECT_FALSE(run.gpus[r]->ran);
  }
}

TEST(GpuPreflight, TheFirstFailureStopsRanksStillRunning) {
  // Rank 1 fails; rank 3 would wait until the timeout (20 s) in a
  // collective, but rank 0 stops it.
  GpuRun run = RunGpuRanks(4, -1, 1, 3);
  for (size_t r = 0; r < 4; ++r) ASSERT_FALSE(run.out[r].ok());
  const std::string& m = run.out[3].error().message;
  EXPECT_NE(m.find("preflight nccl: rank 1 on host1: wrong result on GPU 0"), std::string::npos) << m;
  // Rank 3 never finished; ranks 0 and 2 may or may not have reported first.
  const size_t stopped = m.find("had not finished when rank 0 stopped the preflight");
  ASSERT_NE(stopped, std::string::npos) << m;
  EXPECT_EQ(m.back(), '3') << m;
}

}  // namespace
}  // namespace aml
