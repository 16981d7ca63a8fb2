#include "shim/preflight/node_fan_in.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "shim/net/local_socket.h"

namespace aml {
namespace {

// An abstract socket bound and listening with the smallest backlog, never
// accepting: what a stranger who squats the node's name would hold.
struct Squatter {
  Fd fd;
  std::vector<Fd> queued;

  explicit Squatter(const std::string& name) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    fd = Fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(listen(fd.get(), 0), 0);
    // Fill its backlog.
    for (int i = 0; i < 8; ++i) {
      auto c = ConnectLocal(name);
      if (!c.ok()) break;
      queued.push_back(std::move(*c));
    }
  }
};

TEST(NodeFanIn, ANameHeldByAListenerThatAcceptsNobodyIsGivenUpAtOnce) {
  const std::string name = "aml-shim-test-squat-" + std::to_string(getpid());
  Squatter squatter(name);
  auto joined = JoinLeader(name, Clock::now() + std::chrono::seconds(20));
  ASSERT_FALSE(joined.ok());
  EXPECT_NE(joined.error().message.find("is held by a listener that accepts nobody"),
            std::string::npos)
      << joined.error().message;
}

TEST(NodeFanIn, NoLeaderByTheDeadlineSaysSo) {
  const std::string name = "aml-shim-test-none-" + std::to_string(getpid());
  auto joined = JoinLeader(name, Clock::now() + std::chrono::milliseconds(200));
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.error().message, "no node leader answered in time");
}

TEST(NodeFanIn, ALeaderOfThisUserIsJoined) {
  const std::string name = "aml-shim-test-lead-" + std::to_string(getpid());
  auto leader = NodeLeader::Start(name, 2, Prover());
  ASSERT_NE(leader, nullptr);
  auto joined = JoinLeader(name, Clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  EXPECT_TRUE(joined->valid());
}

}  // namespace
}  // namespace aml
