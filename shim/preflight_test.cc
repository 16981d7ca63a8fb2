#include "shim/preflight.h"

#include <gtest/gtest.h>

#include <thread>

#include "shim/tcp.h"

namespace aml {
namespace {

int FreePort() {
  auto l = ListenAny(0);
  return l.ok() ? l->port : 0;
}

std::vector<Result<PreflightOutcome>> RunRanks(int size, const std::vector<int>& present, int port,
                        std::chrono::milliseconds timeout) {
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

TEST(TcpPreflight, ReportNamesArrivedHostsAndCapsTheList) {
  std::vector<bool> arrived(20, false);
  std::vector<std::string> who(20);
  arrived[0] = true;
  who[0] = "n1 (198.18.0.1)";
  std::string r = MissingRanksReport(arrived, who, 20, "X:1", 3);
  EXPECT_NE(r.find("19 of 20 ranks did not reach X:1 within 3 s: ranks 1, 2"), std::string::npos) << r;
  EXPECT_NE(r.find("16 and 3 more"), std::string::npos) << r;
  EXPECT_NE(r.find("arrived: 0@n1 (198.18.0.1)"), std::string::npos) << r;
  EXPECT_EQ(MissingRanksReport({true}, {"a"}, 1, "X:1", 0), "");
}

}  // namespace
}  // namespace aml
