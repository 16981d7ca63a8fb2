#include "launch/metrics/metrics_door.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace aml {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Fd Connect(int port, int rcvbuf = 0) {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (rcvbuf) setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(static_cast<uint16_t>(port));
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
  return fd;
}

// The door's loop for `seconds` (the supervisor's, in small).
void Serve(MetricsDoor* door, double seconds, const std::string& body = "m 1\n") {
  const double until = Now() + seconds;
  while (Now() < until) {
    std::vector<pollfd> fds;
    door->AddPollFds(&fds);
    poll(fds.data(), fds.size(), 10);
    door->OnPoll(fds.data(), fds.size(), Now(), [&] { return body; });
    door->OnTimer(Now());
  }
}

// What the peer sent until it closed (nothing more within a second: "").
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) return out;
    const ssize_t r = read(fd, buf, sizeof buf);
    if (r <= 0) return out;
    out.append(buf, static_cast<size_t>(r));
  }
}

std::unique_ptr<MetricsDoor> OpenLoopback() {
  auto door = MetricsDoor::Open({"127.0.0.1", 0});
  EXPECT_TRUE(door.ok()) << door.error().message;
  return std::move(*door);
}

TEST(MetricsAddr, ParsedOrRefusedWithTheOptionNamed) {
  auto a = ParseMetricsAddr("127.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  auto any = ParseMetricsAddr(":9400");
  ASSERT_TRUE(any.ok()) << any.error().message;
  EXPECT_EQ(any->host, "");
  auto v6 = ParseMetricsAddr("[::1]:9400");
  ASSERT_TRUE(v6.ok()) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  for (const char* bad : {"9400", "127.0.0.1", "gpu01:9400", "127.0.0.1:0x10", "127.0.0.1:70000", ""}) {
    auto r = ParseMetricsAddr(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--metrics-addr"), std::string::npos) << r.error().message;
  }
}

TEST(MetricsDoor, APortInUseIsRefusedWithWhere) {
  auto door = OpenLoopback();
  auto again = MetricsDoor::Open({"127.0.0.1", door->port()});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("--metrics-addr 127.0.0.1:" + std::to_string(door->port()) +
                                       ": cannot listen"),
            std::string::npos)
      << again.error().message;
}

TEST(MetricsDoor, GetMetricsAnswersTheTextFormatAndCloses) {
  auto door = OpenLoopback();
  Fd c = Connect(door->port());
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
  ASSERT_EQ(write(c.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  Serve(door.get(), 0.2, "aml_shim_up 1\n");
  const std::string got = ReadAll(c.get());
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(got.find("Content-Length: 14\r\n"), std::string::npos) << got;
  EXPECT_EQ(got.substr(got.size() - 14), "aml_shim_up 1\n");
  EXPECT_EQ(door->served(), 1u);
  EXPECT_EQ(door->connections(), 0u);
}

TEST(MetricsDoor, OtherPathsAndMethodsGetAShortError) {
  auto door = OpenLoopback();
  for (const auto& [req, status] :
       {std::pair<std::string, std::string>{"GET / HTTP/1.0\r\n\r\n", "404 Not Found"},
        {"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "405 Method Not Allowed"},
        {"GET /metrics/../etc/passwd HTTP/1.1\r\n\r\n", "404 Not Found"}}) {
    Fd c = Connect(door->port());
    ASSERT_EQ(write(c.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
    Serve(door.get(), 0.1);
    const std::string got = ReadAll(c.get());
    EXPECT_EQ(got.rfind("HTTP/1.1 " + status + "\r\n", 0), 0u) << req << " -> " << got;
  }
  EXPECT_EQ(door->served(), 0u);
}

TEST(MetricsDoor, AHugeRequestIsRefusedAndAnIdleOneClosedInItsTime) {
  auto door = OpenLoopback();
  Fd huge = Connect(door->port());
  const std::string big = "GET /metrics HTTP/1.1\r\nX: " + std::string(MetricsDoor::kMaxRequest, 'a');
  ASSERT_EQ(write(huge.get(), big.data(), big.size()), static_cast<ssize_t>(big.size()));
  Fd idle = Connect(door->port());
  Serve(door.get(), 0.3);
  EXPECT_EQ(ReadAll(huge.get()).rfind("HTTP/1.1 431 ", 0), 0u);
  EXPECT_EQ(door->connections(), 1u);  // the idle one, until its time is up
  EXPECT_LE(door->NextDeadline(), Now() + MetricsDoor::kConnectionS);
  door->OnTimer(Now() + MetricsDoor::kConnectionS + 1);
  EXPECT_EQ(door->connections(), 0u);
  EXPECT_EQ(ReadAll(idle.get()), "");  // closed with no answer
}

TEST(MetricsDoor, ACrowdOfSilentConnectionsDoesNotKeepAScrapeOut) {
  // 40 connections that say nothing, then a scrape: the silent ones give
  // up their seats, the scrape is answered.
  auto door = OpenLoopback();
  std::vector<Fd> crowd;
  for (int i = 0; i < 40; ++i) crowd.push_back(Connect(door->port()));
  Serve(door.get(), 0.2);
  EXPECT_EQ(door->connections(), MetricsDoor::kSeats);
  Fd c = Connect(door->port());
  const std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
  ASSERT_EQ(write(c.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  Serve(door.get(), 0.2);
  EXPECT_EQ(ReadAll(c.get()).rfind("HTTP/1.1 200 OK", 0), 0u);
  EXPECT_GE(door->given_up(), 40u - MetricsDoor::kSeats + 1);
}

TEST(MetricsDoor, AClientThatNeverReadsBlocksNothing) {
  // A 4 MiB answer to a client that reads none of it: the door writes what
  // the socket takes, goes on serving others, and closes it in its time.
  auto door = OpenLoopback();
  Fd slow = Connect(door->port(), 4096);  // (before connecting: the window it offers)
  const std::string req = "GET /metrics HTTP/1.1\r\n\r\n";
  ASSERT_EQ(write(slow.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  const std::string body((4 << 20) - 1, 'x');
  Serve(door.get(), 0.2, body);
  EXPECT_EQ(door->connections(), 1u);
  Fd quick = Connect(door->port());
  ASSERT_EQ(write(quick.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  Serve(door.get(), 0.2, "m 1\n");
  EXPECT_EQ(ReadAll(quick.get()).rfind("HTTP/1.1 200 OK", 0), 0u);
  door->OnTimer(Now() + MetricsDoor::kConnectionS + 1);
  EXPECT_EQ(door->connections(), 0u);
}

}  // namespace
}  // namespace aml
