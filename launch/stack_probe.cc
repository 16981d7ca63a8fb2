#include "launch/stack_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "launch/child.h"
#include "shim/base/clock.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/text_list.h"

namespace aml {
namespace {

constexpr size_t kMaxText = 256 << 10;

bool IsPython(pid_t pid) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  std::string exe(buf, static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  return exe.compare(slash == std::string::npos ? 0 : slash + 1, 6, "python") == 0;
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// "func (file:line)" -> frame; false when it is not one.
bool FrameInParens(std::string s, StackFrame* f) {
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  const size_t open = s.rfind(" (");
  if (open == std::string::npos || s.back() != ')') return false;
  const std::string where = s.substr(open + 2, s.size() - open - 3);
  const size_t colon = where.rfind(':');
  f->function = s.substr(0, open);
  f->file = colon == std::string::npos ? where : where.substr(0, colon);
  f->line = colon == std::string::npos ? 0 : std::atoi(where.c_str() + colon + 1);
  return !f->function.empty();
}

}  // namespace

std::vector<StackFrame> ParsePySpy(const std::string& text) {
  // Thread 123 (idle): "MainThread"
  //     all_reduce (<path of the file>:1541)
  std::vector<StackFrame> frames;
  bool in_main = false;
  for (const std::string& line : SplitLines(text)) {
    if (StartsWith(line, "Thread ")) {
      if (in_main) break;
      in_main = line.find("\"MainThread\"") != std::string::npos;
      continue;
    }
    StackFrame f;
    if (in_main && StartsWith(line, "    ") && FrameInParens(line, &f)) frames.push_back(f);
  }
  return frames;
}

std::vector<StackFrame> ParseEuStack(const std::string& text, pid_t pid) {
  // TID 123:
  // #0  0x00007f3a2b0e9f1a __GI___clock_nanosleep
  std::vector<StackFrame> frames;
  bool in_main = false;
  const std::string header = "TID " + std::to_string(pid) + ":";
  for (const std::string& line : SplitLines(text)) {
    if (StartsWith(line, "TID ")) {
      if (in_main) break;
      in_main = line == header;
      continue;
    }
    if (!in_main || !StartsWith(line, "#")) continue;
    std::stringstream in(line);
    std::string index, addr, function;
    in >> index >> addr >> function;
    if (!function.empty()) frames.push_back({"", 0, function});
  }
  return frames;
}

std::vector<StackFrame> ParseGdb(const std::string& text) {
  // Thread 1 (Thread 0x7f... (LWP 123) "sleep"):
  // #0  0x00007f... in clock_nanosleep () from /lib/x86_64-linux-gnu/libc.so.6
  // #1  main (argc=1, argv=...) at <source file>:57
  std::vector<StackFrame> frames;
  bool in_main = false, any_thread = false;
  for (const std::string& line : SplitLines(text)) {
    if (StartsWith(line, "Thread ")) {
      if (in_main) break;
      any_thread = true;
      in_main = StartsWith(line, "Thread 1 ");
      continue;
    }
    if ((any_thread && !in_main) || !StartsWith(line, "#")) continue;
    std::string rest = line.substr(line.find(' ') == std::string::npos ? line.size()
                                                                        : line.find(' '));
    while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
    const size_t in = rest.find(" in ");
    if (rest.rfind("0x", 0) == 0 && in != std::string::npos) rest = rest.substr(in + 4);
    StackFrame f;
    f.function = rest.substr(0, rest.find(' '));
    const size_t at = rest.rfind(" at ");
    if (at != std::string::npos) {
      const std::string where = rest.substr(at + 4);
      const size_t colon = where.rfind(':');
      f.file = where.substr(0, colon);
      if (colon != std::string::npos) f.line = std::atoi(where.c_str() + colon + 1);
    }
    if (!f.function.empty()) frames.push_back(f);
  }
  return frames;
}

StackProbe::~StackProbe() {
  if (running_) Finish();
}

void StackProbe::Start(const std::vector<pid_t>& pids, double timeout_s) {
  if (running_) Finish();
  out_.assign(pids.size(), ProbedStack{});
  readers_.assign(pids.size(), Reader{});
  deadline_ = MonotonicSeconds() + timeout_s;
  timeout_s_ = timeout_s;
  running_ = true;
  const std::string py_spy = FoundOnPath("py-spy"), eu_stack = FoundOnPath("eu-stack"),
                    gdb = FoundOnPath("gdb");
  // A reader must not wait on a debuginfod server (no cluster node may reach
  // one; elfutils would try for 90 s per file).
  EnvSnapshot env = EnvSnapshot::FromEnvp(environ);
  env.Unset("DEBUGINFOD_URLS");
  for (size_t i = 0; i < pids.size(); ++i) {
    out_[i].pid = pids[i];
    const std::string pid = std::to_string(pids[i]);
    std::vector<std::string> argv;
    if (IsPython(pids[i])) {
      if (py_spy.empty()) continue;  // faulthandler gives its stack
      out_[i].tool = "py-spy";
      argv = {py_spy, "dump", "--pid", pid};
    } else if (!eu_stack.empty()) {
      out_[i].tool = "eu-stack";
      argv = {eu_stack, "-p", pid};
    } else if (!gdb.empty()) {
      out_[i].tool = "gdb";
      argv = {gdb, "-p", pid, "-batch", "-nx", "-iex", "set debuginfod enabled off",
              "-ex", "thread apply all bt"};
    } else {
      out_[i].text = "no native stack: neither eu-stack nor gdb is on PATH\n";
      continue;
    }
    int code = 0;
    SpawnSpec spec;
    spec.search_path = false;
    spec.pipe_output = true;
    spec.stdin_null = true;  // never the user's terminal
    auto spawned = Spawn(argv, env, spec, &code);
    if (!spawned.ok()) {
      out_[i].text = "no stack: " + spawned.error().message + "\n";
      continue;
    }
    readers_[i].started = true;
    readers_[i].pid = spawned->pid;
    readers_[i].out = spawned->out_fd;
    readers_[i].err = spawned->err_fd;
  }
}

void StackProbe::AddPollFds(std::vector<pollfd>* fds) const {
  if (!running_) return;
  for (const Reader& r : readers_)
    for (int fd : {r.out, r.err})
      if (fd >= 0) fds->push_back({fd, POLLIN, 0});
}

void StackProbe::Read(const pollfd* fds, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    if (!fds[k].revents) continue;
    for (Reader& r : readers_)
      for (int* fd : {&r.out, &r.err}) {
        if (*fd != fds[k].fd) continue;
        char buf[16384];
        ssize_t got = read(*fd, buf, sizeof buf);
        if (got > 0) {
          if (r.text.size() < kMaxText) r.text.append(buf, static_cast<size_t>(got));
        } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
          close(*fd);
          *fd = -1;
        }
      }
  }
}

bool StackProbe::Done(double now) const {
  if (!running_) return true;
  if (now >= deadline_) return true;
  for (const Reader& r : readers_)
    if (r.out >= 0 || r.err >= 0) return false;
  return true;
}

bool StackProbe::Reaped(pid_t pid) {
  for (Reader& r : readers_)
    if (r.pid == pid && pid > 0) {
      r.pid = -1;
      return true;
    }
  return false;
}

std::vector<ProbedStack> StackProbe::Finish() {
  running_ = false;
  for (size_t i = 0; i < readers_.size(); ++i) {
    Reader& r = readers_[i];
    ProbedStack& p = out_[i];
    if (!r.started) continue;  // no reader ran: its text says why
    bool late = false;
    for (int* fd : {&r.out, &r.err})
      if (*fd >= 0) {
        close(*fd);
        *fd = -1;
        late = true;
      }
    if (r.pid > 0) {
      int status = 0;
      if (waitpid(r.pid, &status, WNOHANG) == 0) {
        kill(-r.pid, SIGKILL);
        late = true;
        while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
        }
      }
      r.pid = -1;
    }
    p.text = r.text;
    if (late)
      p.text += p.tool + " did not finish within " +
                std::to_string(static_cast<int>(timeout_s_)) + " s\n";
    if (p.tool == "py-spy") p.frames = ParsePySpy(r.text);
    else if (p.tool == "eu-stack") p.frames = ParseEuStack(r.text, p.pid);
    else p.frames = ParseGdb(r.text);
  }
  readers_.clear();
  return std::move(out_);
}

std::vector<ProbedStack> ProbeStacks(const std::vector<pid_t>& pids, double timeout_s) {
  StackProbe probe;
  probe.Start(pids, timeout_s);
  for (;;) {
    const double now = MonotonicSeconds();
    if (probe.Done(now)) break;
    std::vector<pollfd> fds;
    probe.AddPollFds(&fds);
    if (poll(fds.data(), fds.size(), static_cast<int>((probe.deadline() - now) * 1000) + 1) < 0 &&
        errno != EINTR)
      break;
    probe.Read(fds.data(), fds.size());
  }
  return probe.Finish();
}

}  // namespace aml
