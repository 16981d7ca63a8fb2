#include "launch/stack_probe.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <vector>

#include "shim/base/clock.h"

namespace aml {
namespace {

TEST(StackProbe, PySpysMainThread) {
  const char* text =
      "Process 4242: /usr/bin/python3 hang.py\n"
      "Python v3.11.2 (/usr/bin/python3.11)\n\n"
      "Thread 4250 (idle): \"Thread-1\"\n"
      "    wait (threading.py:324)\n"
      "Thread 4242 (idle): \"MainThread\"\n"
      "    all_reduce (torch/distributed/distributed_c10d.py:1541)\n"
      "    main (hang.py:29)\n"
      "    <module> (hang.py:34)\n";
  auto f = ParsePySpy(text);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(StackSignature(f),
            "all_reduce (distributed_c10d.py:1541) < main (hang.py:29) < <module> (hang.py:34)");
}

TEST(StackProbe, EuStacksThreadOfThePid) {
  const char* text =
      "PID 77 - process\n"
      "TID 78:\n#0  0x00007f0000000001 futex_wait\n"
      "TID 77:\n#0  0x00007f3a2b0e9f1a __GI___clock_nanosleep\n"
      "#1  0x00007f3a2b0ef1a3 __GI___nanosleep\n#2  0x000055d0c0de0a1e main\n";
  EXPECT_EQ(StackSignature(ParseEuStack(text, 77)),
            "__GI___clock_nanosleep < __GI___nanosleep < main");
}

TEST(StackProbe, GdbsThreadOne) {
  const char* text =
      "Thread 2 (Thread 0x7f (LWP 78) \"worker\"):\n#0  0x00007f in futex_wait () from libc\n"
      "Thread 1 (Thread 0x7e (LWP 77) \"train\"):\n"
      "#0  0x00007f3a2b0e9f1a in clock_nanosleep () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#1  step (n=3) at /src/train.cc:57\n"
      "#2  0x000055d0c0de0a1e in main (argc=1, argv=0x7ffd) at /src/train.cc:90\n";
  EXPECT_EQ(StackSignature(ParseGdb(text)),
            "clock_nanosleep < step (train.cc:57) < main (train.cc:90)");
}

// A native process to read: `sleep 60`, given 0.2 s to be exec'd.
pid_t StartSleeper() {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sleep", "sleep", "60", nullptr);
    _exit(127);
  }
  usleep(200000);
  return pid;
}

// A real native process, read by whichever of eu-stack and gdb is on PATH
// (CI installs gdb).
TEST(StackProbe, ReadsARealProcessWithoutEndingIt) {
  const pid_t pid = StartSleeper();
  ASSERT_GT(pid, 0);
  auto got = ProbeStacks({pid}, 20);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].tool.empty()) << got[0].text;
  EXPECT_FALSE(got[0].frames.empty()) << got[0].text;
  EXPECT_EQ(kill(pid, 0), 0);  // still there: reading did not end it
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// As the supervisor drives it: the readers' output read from the caller's
// own poll loop, and a reader the caller reaped (a supervisor reaps every
// child it has) neither waited for nor signalled again by Finish.
TEST(StackProbe, ReadFromTheCallersLoopWhichMayReapTheReaders) {
  const pid_t pid = StartSleeper();
  ASSERT_GT(pid, 0);
  StackProbe probe;
  probe.Start({pid}, 20);
  ASSERT_TRUE(probe.running());
  int reaped = 0;
  while (!probe.Done(MonotonicSeconds())) {
    std::vector<pollfd> fds;
    probe.AddPollFds(&fds);
    poll(fds.data(), fds.size(), 100);
    probe.Read(fds.data(), fds.size());
    // Reap whatever ended except the rank, as Supervisor::Reap does.
    for (pid_t ended; (ended = waitpid(-1, nullptr, WNOHANG)) > 0;) {
      EXPECT_NE(ended, pid);
      if (probe.Reaped(ended)) ++reaped;
    }
  }
  if (reaped == 0) {  // its output ended first: reap it now, before Finish
    const pid_t ended = waitpid(-1, nullptr, 0);
    EXPECT_NE(ended, pid);
    EXPECT_TRUE(probe.Reaped(ended));
  }
  auto got = probe.Finish();
  EXPECT_FALSE(probe.running());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].frames.empty()) << got[0].text;
  EXPECT_EQ(got[0].text.find("did not finish"), std::string::npos) << got[0].text;
  EXPECT_FALSE(probe.Reaped(pid));  // the rank is not a reader
  EXPECT_EQ(kill(pid, 0), 0);       // reading did not end it
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace aml
