#include "shim/rendezvous/token_server.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <vector>

#include "shim/base/fd_limit.h"

namespace aml {
namespace {

using std::chrono::milliseconds;

int OpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

Result<std::string> Ask(int port, Fd* keep) {
  auto fd = ConnectTcp("127.0.0.1", port, Clock::now() + milliseconds(2000));
  if (!fd.ok()) return fd.error();
  auto answer = RecvFrame(fd->get(), 128, Clock::now() + milliseconds(2000));
  if (keep) *keep = std::move(*fd);
  return answer;
}

TEST(TokenServer, AnswersEveryoneWhatItWasGiven) {
  auto l = ListenAny(0);
  ASSERT_TRUE(l.ok());
  TokenServer server(std::move(*l), "proof");
  auto a = Ask(server.port(), nullptr);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(*a, "proof");
}

// Strangers who connect and never close cost rank 0 at most kMaxHeld
// descriptors, and the next rank is still answered.
TEST(TokenServer, IdleConnectionsAreCappedAndDoNotShutOutARank) {
  RaiseFdLimit();
  const int strangers = static_cast<int>(TokenServer::kMaxHeld) + 300;
  if (FdLimit() < static_cast<rlim_t>(3 * strangers)) GTEST_SKIP() << "hard RLIMIT_NOFILE too low";
  auto l = ListenAny(0);
  ASSERT_TRUE(l.ok());
  TokenServer server(std::move(*l), "proof");
  const int before = OpenFds();
  std::vector<Fd> idle(static_cast<size_t>(strangers));
  for (Fd& f : idle) ASSERT_TRUE(Ask(server.port(), &f).ok());
  auto rank = Ask(server.port(), nullptr);
  ASSERT_TRUE(rank.ok()) << rank.error().message;
  EXPECT_EQ(*rank, "proof");
  const int held_by_server = OpenFds() - before - strangers;
  EXPECT_LE(held_by_server, static_cast<int>(TokenServer::kMaxHeld) + 1);
  server.Stop();
}

}  // namespace
}  // namespace aml
