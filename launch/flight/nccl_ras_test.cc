#include "launch/flight/nccl_ras.h"

#include <gtest/gtest.h>

#include "launch/flight/fixture_test_util.h"
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace aml {
namespace {

// A stand-in for NCCL's RAS socket that replays the exchange captured on an
// H100 (tests/fixtures/flight/README.md): one client, then it closes.
// A TCP socket bound to a free port of 127.0.0.1 (not listening yet).
int BoundOnLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

class StandIn {
 public:
  // `json`: what STATUS answers after "SET FORMAT json" (an old NCCL: "",
  // it refuses the format and answers `text`); `silent`: never answers.
  StandIn(std::string json, std::string text = "", bool silent = false) {
    fd_ = BoundOnLoopback(&port_);
    listen(fd_, 1);
    thread_ = std::thread([this, json, text, silent] { Serve(json, text, silent); });
  }
  ~StandIn() {
    Wait();
    close(fd_);
  }
  // Until its one client is served (what it heard is then whole).
  void Wait() {
    if (thread_.joinable()) thread_.join();
  }
  std::string addr() const { return "127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> heard;

 private:
  void Serve(const std::string& json, const std::string& text, bool silent) {
    const int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    std::string buf;
    char chunk[512];
    auto line = [&]() -> std::string {
      while (buf.find('\n') == std::string::npos) {
        const ssize_t n = recv(c, chunk, sizeof chunk, 0);
        if (n <= 0) return "";
        buf.append(chunk, static_cast<size_t>(n));
      }
      std::string l = buf.substr(0, buf.find('\n'));
      buf.erase(0, l.size() + 1);
      heard.push_back(l);
      return l;
    };
    auto say = [&](const std::string& s) { send(c, s.data(), s.size(), MSG_NOSIGNAL); };
    if (silent) {
      line();
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      close(c);
      return;
    }
    for (std::string l = line(); !l.empty(); l = line()) {
      if (l == "CLIENT PROTOCOL 2") say("SERVER PROTOCOL 2\n");
      else if (l.rfind("TIMEOUT", 0) == 0) say("OK\n");
      else if (l == "SET FORMAT json") say(json.empty() ? "ERROR: unknown command\n" : "OK\n");
      else if (l == "STATUS") {
        say(json.empty() ? text : json);
        break;
      }
    }
    close(c);
  }
  int fd_ = -1, port_ = 0;
  std::thread thread_;
};

TEST(NcclRas, TheCapturedExchangeOfAHealthyJobSaysNothing) {
  StandIn ras(FlightFixture("ncclras-status.json"));
  auto r = AskNcclRas(ras.addr(), 5);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "");
  ras.Wait();
  EXPECT_EQ(ras.heard, (std::vector<std::string>{"CLIENT PROTOCOL 2", "TIMEOUT 5",
                                                 "SET FORMAT json", "STATUS"}));
  auto parsed = ParseRasJson(FlightFixture("ncclras-status.json"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->version, "2.28.9");
  ASSERT_EQ(parsed->comms.size(), 1u);
  EXPECT_EQ(parsed->comms[0].hash, "0xaa507f5f4e0db7b7");
  ASSERT_EQ(parsed->comms[0].ranks.size(), 1u);
  EXPECT_EQ(parsed->comms[0].ranks[0].host, "192.0.2.2");
  EXPECT_EQ(parsed->comms[0].ranks[0].counts.at("AllReduce"), 0);
}

TEST(NcclRas, MissingRanksErrorsAndRanksBehindAreOneLine) {
  const std::string json = R"({"nccl_version": "2.28.9", "communicators": [{
    "hash": "0x1", "size": 4, "ranks": [
      {"rank": 0, "host": "10.0.0.1", "status": {"async_error": 0, "abort_flag": false},
       "collective_counts": {"AllReduce": 12, "Broadcast": 1}},
      {"rank": 1, "host": "10.0.0.1", "status": {"async_error": 0, "abort_flag": false},
       "collective_counts": {"AllReduce": 12, "Broadcast": 1}},
      {"rank": 2, "host": "10.0.0.2", "status": {"async_error": 5, "abort_flag": false},
       "collective_counts": {"AllReduce": 11, "Broadcast": 1}}],
    "missing_ranks": [{"rank": 3, "host": "10.0.0.2"}]}]})";
  StandIn ras(json);
  auto r = AskNcclRas(ras.addr(), 5);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r,
            "aml-shim: NCCL RAS (NCCL 2.28.9): communicator 0x1 of 4 ranks: rank 3 missing (NCCL "
            "cannot reach them: 10.0.0.2); rank 2 in error; rank 2 ran 11 AllReduce, the others "
            "up to 12\n");
}

TEST(NcclRas, AnOlderNcclAnswersInText) {
  std::string text = FlightFixture("ncclras-status.txt");
  const size_t at = text.find("Errors\n======\n");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 14, "  Communicator 0x1: rank 3 on 10.0.0.2 is unreachable (dead peer)\n");
  StandIn ras("", text);
  auto r = AskNcclRas(ras.addr(), 5);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "aml-shim: NCCL RAS: Communicator 0x1: rank 3 on 10.0.0.2 is unreachable (dead "
                "peer)\n");
}

TEST(NcclRas, NoAnswerIsSaidWithinTheTimeout) {
  // Nothing listens (no NCCL on this node): at once.
  int port = 0;
  close(BoundOnLoopback(&port));
  const std::string closed = "127.0.0.1:" + std::to_string(port);
  auto none = AskNcclRas(closed, 5);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "nothing answers on NCCL_RAS_ADDR " + closed);
  // A server that never answers: given up at the deadline, on its thread.
  StandIn mute("", "", true);
  NcclRasQuery q;
  const auto t0 = std::chrono::steady_clock::now();
  q.Start(mute.addr(), 1);
  while (!q.Done()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(q.line(), "");
  EXPECT_NE(q.why().find("no answer in time"), std::string::npos) << q.why();
}

}  // namespace
}  // namespace aml
