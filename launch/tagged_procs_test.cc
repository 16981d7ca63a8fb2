#include "launch/tagged_procs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "launch/proc_start.h"
#include "shim/base/random_token.h"

namespace aml {
namespace {

// `text` through a pipe, as /proc/PID/environ would be read.
bool Has(const std::string& text, const std::string& tag) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  pid_t writer = fork();
  if (writer == 0) {
    close(p[0]);
    size_t at = 0;
    while (at < text.size()) {
      ssize_t n = write(p[1], text.data() + at, std::min<size_t>(3000, text.size() - at));
      if (n <= 0) _exit(1);
      at += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(p[1]);
  bool found = StreamHas(p[0], tag.data(), tag.size());
  close(p[0]);
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  return found;
}

TEST(StreamHas, FindsTheTagWhereverItIsEvenAcrossReads) {
  const std::string tag = RandomToken();
  const std::string var = std::string(kKeeperTagVar) + "=";
  EXPECT_TRUE(Has(var + tag + '\0', tag));
  EXPECT_TRUE(Has("A=1" + std::string(1, '\0') + var + "0123:" + tag + '\0', tag));
  // Straddling every read boundary the stream could have.
  for (size_t pad : {8190u, 8191u, 8192u, 8193u, 20000u})
    EXPECT_TRUE(Has(std::string(pad, 'x') + tag, tag)) << pad;
  EXPECT_FALSE(Has(std::string(20000, 'x'), tag));
  EXPECT_FALSE(Has(var + tag.substr(0, 31) + '\0', tag));  // a prefix is not the tag
  EXPECT_FALSE(Has("", tag));
}

pid_t StartSleeper(const std::string& env_entry) {
  pid_t pid = fork();
  if (pid == 0) {
    setsid();  // in no group anybody watches
    char* envp[] = {const_cast<char*>(env_entry.c_str()), nullptr};
    execle("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr), envp);
    _exit(127);
  }
  return pid;
}

// The sleeper has exec'd: its environment is its own, not ours.
void WaitExeced(pid_t pid) {
  char path[64];
  ProcPath(pid, "exe", path);
  char target[256] = {};
  for (int i = 0; i < 1000; ++i) {
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)).find("sleep") != std::string::npos)
      return;
    usleep(5000);
  }
}

TEST(SignalTagged, EndsOnlyTheProcessesThatCarryTheTag) {
  const std::string tag = RandomToken();
  const std::string other = RandomToken();
  const long long since = StartTicks(getpid());
  pid_t tagged = StartSleeper(std::string(kKeeperTagVar) + "=" + other + ":" + tag);
  pid_t untagged = StartSleeper(std::string(kKeeperTagVar) + "=" + other);
  WaitExeced(tagged);
  WaitExeced(untagged);
  EXPECT_EQ(SignalTagged(tag.data(), tag.size(), since, 0, 0), 1);
  EXPECT_EQ(SignalTagged(tag.data(), tag.size(), since, SIGTERM, 0), 1);
  int status = 0;
  ASSERT_EQ(waitpid(tagged, &status, 0), tagged);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(kill(untagged, 0), 0) << "a process without the tag was signalled";
  // A process older than `since` is never taken, tag or not.
  EXPECT_EQ(SignalTagged(other.data(), other.size(), StartTicks(untagged) + 1000000, SIGKILL, 0), 0);
  EXPECT_EQ(kill(untagged, 0), 0);
  EXPECT_EQ(SignalTagged(other.data(), other.size(), since, SIGKILL, 0), 1);
  ASSERT_EQ(waitpid(untagged, &status, 0), untagged);
  EXPECT_EQ(SignalTagged(tag.data(), tag.size(), since, 0, 0), 0);
}

}  // namespace
}  // namespace aml
