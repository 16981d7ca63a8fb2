#include "shim/base/bounded_call.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <memory>

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(CallWithin, ACallThatReturnsIsWaitedFor) {
  int value = 0;
  EXPECT_TRUE(CallWithin(30, [&value] { value = 42; }));
  EXPECT_EQ(value, 42);
}

TEST(CallWithin, ACallThatNeverReturnsIsLeftBehind) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  EXPECT_FALSE(CallWithin(0.05, [release] {
    while (!release->load()) usleep(1000);
  }));
  release->store(true);
}

TEST(CallWithin, TheCallRunsWithEverySignalBlocked) {
  // A library's thread started from the call inherits this mask: a SIGTERM
  // for the supervisor's signalfd must never be delivered to it.
  sigset_t seen;
  sigemptyset(&seen);
  ASSERT_TRUE(CallWithin(30, [&seen] { pthread_sigmask(SIG_SETMASK, nullptr, &seen); }));
  EXPECT_EQ(sigismember(&seen, SIGTERM), 1);
  EXPECT_EQ(sigismember(&seen, SIGINT), 1);
  sigset_t mine;
  pthread_sigmask(SIG_SETMASK, nullptr, &mine);
  EXPECT_EQ(sigismember(&mine, SIGTERM), 0) << "the caller's mask is restored";
}

}  // namespace
}  // namespace aml
