#include "launch/store_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "launch/idle_class.h"
#include "shim/base/env_snapshot.h"

namespace aml {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

bool Listens(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

void Sleep(double s) {
  timespec ts{static_cast<time_t>(s), static_cast<long>((s - static_cast<time_t>(s)) * 1e9)};
  nanosleep(&ts, nullptr);
}

class StoreHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/store-host-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    host_.End();
    for (pid_t p : host_.pids()) waitpid(p, nullptr, 0);
    unlink((dir_ + "/store_host.py").c_str());
    rmdir(dir_.c_str());
  }
  // Host(port) retried while the host imports torch (at most 120 s).
  bool HostWhenReady(int port, std::string* why) {
    for (int i = 0; i < 1200; ++i) {
      if (host_.Host(port, why)) return true;
      if (!host_.live()) return false;
      Sleep(0.1);
    }
    return false;
  }
  std::string dir_;
  StoreHost host_;
};

TEST_F(StoreHostTest, EachRestartsStoreListensBeforeAnyRankAndTheLastOneCloses) {
  if (access(kPython, X_OK) != 0 ||
      system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no torch at " << kPython;
  PythonCommand command;
  command.interpreter = kPython;
  command.target = "train.py";
  pid_t pid = -1;
  const bool idle = WhyNotLeaveIdleClass().empty();
  ASSERT_EQ(host_.Start(command, EnvSnapshot::FromEnvp(environ), dir_, idle, "127.0.0.1", 2, &pid),
            "");
  if (idle) {
    EXPECT_TRUE(InIdleClass(pid)) << "importing, it runs on what the ranks leave";
  }
  const int first = FreePort();
  std::string why;
  ASSERT_TRUE(HostWhenReady(first, &why)) << why;
  EXPECT_FALSE(InIdleClass(pid)) << "its store answers the ranks: the normal class";
  EXPECT_TRUE(Listens(first)) << "the store listens before any rank starts";
  const int second = FreePort();
  ASSERT_TRUE(host_.Host(second, &why)) << why;
  EXPECT_TRUE(Listens(second));
  EXPECT_FALSE(Listens(first)) << "the last attempt's store is closed";
}

TEST_F(StoreHostTest, AnInterpreterWithoutTorchSaysSoAndIsEnded) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  PythonCommand command;
  command.interpreter = kPython;
  command.flags = {"-S", "-I"};  // no site packages: no torch
  command.target = "train.py";
  pid_t pid = -1;
  ASSERT_EQ(host_.Start(command, EnvSnapshot::FromEnvp(environ), dir_, false, "127.0.0.1", 2, &pid),
            "");
  std::string why;
  EXPECT_FALSE(HostWhenReady(FreePort(), &why));
  EXPECT_NE(why.find("ModuleNotFoundError"), std::string::npos) << why;
  EXPECT_FALSE(host_.live());
}

}  // namespace
}  // namespace aml
