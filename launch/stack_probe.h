// Reading a hung rank's stack from outside, before it is ended (docs/control-plane.md,
// "Hang watchdog"): `py-spy dump` for a Python rank when py-spy is on PATH
// (it does not stop the process), else for any other rank the native frames
// of `eu-stack` or `gdb` when one is on PATH. All readers run at once, each
// bounded; what they print is kept whole and parsed into frames of the main
// thread (stack_dump.h) for the roll-call's signature.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/stack_dump.h"

namespace aml {

struct ProbedStack {
  pid_t pid = -1;                  // the rank read
  std::string tool;                // "py-spy", "eu-stack", "gdb"; "" when none ran
  std::string text;                // what it printed (or why nothing)
  std::vector<StackFrame> frames;  // the main thread's, innermost first
};

// The readers of one collection, read from the supervisor's own loop (it
// never blocks on them): Start spawns them all, AddPollFds and Read take
// their output as it comes, and once Done, Finish ends any still running
// and parses what each printed.
class StackProbe {
 public:
  StackProbe() = default;
  StackProbe(const StackProbe&) = delete;
  StackProbe& operator=(const StackProbe&) = delete;
  ~StackProbe();  // a reader still running is killed and reaped

  // One reader per pid, all at once; each may run `timeout_s`.
  void Start(const std::vector<pid_t>& pids, double timeout_s);
  bool running() const { return running_; }  // started and not yet finished
  double deadline() const { return deadline_; }  // MonotonicSeconds()
  // The readers' open pipes, for poll; Read takes what poll found ready.
  void AddPollFds(std::vector<pollfd>* fds) const;
  void Read(const pollfd* fds, size_t n);
  // Every reader's output ended, or the deadline passed.
  bool Done(double now) const;
  // Ends the readers still running (SIGKILL to each one's group), reaps
  // them, and returns one stack per pid given to Start, in that order.
  std::vector<ProbedStack> Finish();
  // The caller reaped `pid` (a supervisor reaps every child it has): true
  // when it was a reader, which is then not waited for again.
  bool Reaped(pid_t pid);

 private:
  struct Reader {
    pid_t pid = -1;     // the reader, until reaped
    bool started = false;
    int out = -1, err = -1;
    std::string text;
  };
  std::vector<ProbedStack> out_;
  std::vector<Reader> readers_;
  double deadline_ = 0;
  double timeout_s_ = 0;
  bool running_ = false;
};

// Start, then poll until Done, then Finish: one reader per pid, all at
// once, each killed after `timeout_s`.
std::vector<ProbedStack> ProbeStacks(const std::vector<pid_t>& pids, double timeout_s);

// The main thread's frames in each tool's output (for tests).
std::vector<StackFrame> ParsePySpy(const std::string& text);
std::vector<StackFrame> ParseEuStack(const std::string& text, pid_t pid);
std::vector<StackFrame> ParseGdb(const std::string& text);

}  // namespace aml
