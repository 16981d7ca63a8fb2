#include "launch/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "launch/child.h"
#include "launch/cpu_affinity.h"
#include "launch/descendants.h"
#include "launch/failure_report.h"
#include "launch/line_tagger.h"
#include "launch/wait_status.h"
#include "launch/exec.h"
#include "shim/base/log.h"

namespace aml {
namespace {

constexpr size_t kMaxLine = 64 * 1024;       // longer lines are cut
constexpr double kPartialFlushS = 1.0;       // a held partial line waits at most this
constexpr size_t kTailBytes = 16 * 1024;     // stderr kept for the summary
constexpr double kAfterKillS = 5.0;          // wait after SIGKILL before giving up
const int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool IsTerminating(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      pollfd pfd{fd, POLLOUT, 0};
      poll(&pfd, 1, 1000);
    } else {
      return;  // EPIPE or a closed terminal: drop the output
    }
  }
}

struct Stream {
  int fd = -1;
  int out_fd = STDOUT_FILENO;
  int log_fd = -1;
  std::unique_ptr<LineTagger> tagger;
  double partial_since = 0;
  std::string* tail = nullptr;  // stderr only

  void KeepTail(std::string_view data) {
    if (tail) {
      tail->append(data);
      if (tail->size() > 2 * kTailBytes) tail->erase(0, tail->size() - kTailBytes);
    }
  }
};

struct Child {
  ChildLaunch launch;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  double start = 0, end = 0;
  Stream out, err;
  std::string err_tail;
};

class Supervisor {
 public:
  explicit Supervisor(const SupervisorConfig& c) : config_(c) {}
  int Run();

 private:
  bool Start();
  void OpenLogs(Child& c);
  void Reap();
  void OnExit(Child& c, int status);
  void Signal(int sig);
  void BeginTeardown(double now);
  void KillAll(int sig);
  void ReadStream(Stream& s, double now);
  void CloseStream(Stream& s);
  void FlushStaleParts(double now);
  double NextDeadline(double now) const;
  bool AnyRunning() const;
  bool AnyOpenStream() const;
  int Finish();

  const SupervisorConfig& config_;
  std::vector<Child> children_;
  int sfd_ = -1;
  int spawn_failure_code_ = 0;
  Child* first_failure_ = nullptr;
  int shim_signal_ = 0;        // terminating signal aml-shim received
  bool teardown_ = false;
  double kill_at_ = 0;         // SIGKILL deadline during teardown
  bool killed_ = false;
  double give_up_at_ = 0;      // after SIGKILL, stop waiting
  double drain_until_ = 0;     // after the last child, wait for its pipes
  bool stragglers_signalled_ = false;
  std::string out_buf_;  // tagged output, reused across reads
};

void Supervisor::OpenLogs(Child& c) {
  if (!config_.log_dir) return;
  const std::string base = *config_.log_dir + "/rank-" + std::to_string(c.launch.rank);
  for (auto [stream, suffix] : {std::pair{&c.out, ".stdout"}, std::pair{&c.err, ".stderr"}}) {
    std::string path = base + suffix;
    stream->log_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (stream->log_fd < 0)
      LogWarning("cannot write " + path + ": " + std::strerror(errno));
  }
}

bool Supervisor::Start() {
  children_.resize(config_.children.size());
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    c.launch = config_.children[i];
    int code = 0;
    Result<SpawnedChild> spawned = Error{""};
    {
      ScopedCpuBinding bind(c.launch.cpus);  // inherited by the child
      spawned = SpawnChild(c.launch.argv, c.launch.env, config_.pipe_output, &code);
    }
    if (!spawned.ok()) {
      LogError(spawned.error().message);
      spawn_failure_code_ = code;
      return false;
    }
    c.pid = spawned->pid;
    c.running = true;
    c.start = Now();
    std::string prefix = "[rank " + std::to_string(c.launch.rank) + "] ";
    c.out.fd = spawned->out_fd;
    c.err.fd = spawned->err_fd;
    c.err.out_fd = STDERR_FILENO;
    c.err.tail = &c.err_tail;
    if (config_.tag_output) {
      c.out.tagger = std::make_unique<LineTagger>(prefix, kMaxLine);
      c.err.tagger = std::make_unique<LineTagger>(prefix, kMaxLine);
    }
    OpenLogs(c);
    if (config_.foreground_tty && i == 0 && isatty(STDIN_FILENO))
      tcsetpgrp(STDIN_FILENO, c.pid);
  }
  return true;
}

void Supervisor::KillAll(int sig) {
  for (Child& c : children_)
    if (c.running && c.pid > 0) kill(-c.pid, sig);
}

void Supervisor::BeginTeardown(double now) {
  if (teardown_) return;
  teardown_ = true;
  kill_at_ = now + config_.grace_s;
  KillAll(SIGTERM);
}

void Supervisor::OnExit(Child& c, int status) {
  c.running = false;
  c.status = status;
  c.end = Now();
  bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  LogVerbose("rank " + std::to_string(c.launch.rank) + " (pid " + std::to_string(c.pid) +
             ") ended: " + DescribeStatus(status));
  // Stragglers left in its group (DataLoader workers, shell pipelines) end
  // with it.
  kill(-c.pid, SIGTERM);
  if (failed && !first_failure_ && !(teardown_ && !shim_signal_)) {
    first_failure_ = &c;
    BeginTeardown(c.end);
  }
}

void Supervisor::Reap() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;  // 0: none ready; -1: no children left
    for (Child& c : children_) {
      if (c.pid == pid && c.running) {
        OnExit(c, status);
        break;
      }
    }
    // Anything else was an orphan reparented to us: reaped, nothing more.
  }
}

void Supervisor::Signal(int sig) {
  if (sig == SIGCHLD) {
    Reap();
    return;
  }
  LogVerbose("received " + SignalName(sig) + ", forwarding to every child");
  if (IsTerminating(sig)) {
    if (shim_signal_ && !killed_) {
      // A second ^C or SIGTERM: do not wait for the grace period.
      LogInfo("second " + SignalName(sig) + ": killing every child now");
      kill_at_ = Now();
      return;
    }
    shim_signal_ = sig;
    if (!teardown_) {
      teardown_ = true;
      kill_at_ = Now() + config_.grace_s;
    }
  }
  KillAll(sig);
}

void Supervisor::CloseStream(Stream& s) {
  if (s.fd < 0) return;
  std::string out;
  if (s.tagger) s.tagger->Finish(&out);
  if (!out.empty()) WriteAll(s.out_fd, out.data(), out.size());
  close(s.fd);
  s.fd = -1;
  if (s.log_fd >= 0) close(s.log_fd);
  s.log_fd = -1;
}

void Supervisor::ReadStream(Stream& s, double now) {
  static char buf[256 * 1024];
  ssize_t n = read(s.fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    CloseStream(s);
    return;
  }
  std::string_view data(buf, static_cast<size_t>(n));
  if (s.log_fd >= 0) WriteAll(s.log_fd, data.data(), data.size());
  s.KeepTail(data);
  if (!s.tagger) {
    WriteAll(s.out_fd, data.data(), data.size());
    return;
  }
  bool had_partial = s.tagger->has_partial();
  out_buf_.clear();
  s.tagger->Feed(data, &out_buf_);
  if (!out_buf_.empty()) WriteAll(s.out_fd, out_buf_.data(), out_buf_.size());
  if (s.tagger->has_partial() && (!had_partial || !out_buf_.empty())) s.partial_since = now;
}

void Supervisor::FlushStaleParts(double now) {
  for (Child& c : children_) {
    for (Stream* s : {&c.out, &c.err}) {
      if (s->fd < 0 || !s->tagger || !s->tagger->has_partial()) continue;
      if (now - s->partial_since < kPartialFlushS) continue;
      std::string out;
      s->tagger->FlushPartial(&out);
      WriteAll(s->out_fd, out.data(), out.size());
    }
  }
}

bool Supervisor::AnyRunning() const {
  for (const Child& c : children_)
    if (c.running) return true;
  return false;
}

bool Supervisor::AnyOpenStream() const {
  for (const Child& c : children_)
    if (c.out.fd >= 0 || c.err.fd >= 0) return true;
  return false;
}

double Supervisor::NextDeadline(double now) const {
  double next = now + 3600;
  if (teardown_ && !killed_) next = std::min(next, kill_at_);
  if (killed_) next = std::min(next, give_up_at_);
  if (!AnyRunning()) next = std::min(next, drain_until_);
  for (const Child& c : children_)
    for (const Stream* s : {&c.out, &c.err})
      if (s->fd >= 0 && s->tagger && s->tagger->has_partial())
        next = std::min(next, s->partial_since + kPartialFlushS);
  return next;
}

int Supervisor::Run() {
  // Signals are handled synchronously through a signalfd: block them first,
  // so none is lost between the spawn and the loop.
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  for (int s : kForwarded) sigaddset(&handled, s);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTTOU, SIG_IGN);  // for tcsetpgrp from a background group
  sfd_ = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd_ < 0) {
    LogError(std::string("signalfd: ") + std::strerror(errno));
    return kExitShimFailure;
  }
  // Orphaned grandchildren are reparented to us, so we can reap and kill them.
  if (getpid() != 1) prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (config_.log_dir && mkdir(config_.log_dir->c_str(), 0755) != 0 && errno != EEXIST) {
    LogError("--log-dir='" + *config_.log_dir + "': cannot create: " + std::strerror(errno));
    return kExitShimFailure;
  }

  if (!Start()) {
    BeginTeardown(Now());
    kill_at_ = Now();  // children not yet useful: no grace needed
  }

  std::vector<pollfd> fds;
  std::vector<Stream*> streams;
  for (;;) {
    double now = Now();
    if (teardown_ && !killed_ && now >= kill_at_ && AnyRunning()) {
      KillAll(SIGKILL);
      killed_ = true;
      give_up_at_ = now + kAfterKillS;
    }
    if (!AnyRunning()) {
      if (!stragglers_signalled_) {
        // Every child is gone; end what they left behind (their groups were
        // signalled as each exited; orphans that left the group are ours).
        stragglers_signalled_ = true;
        SignalDescendants(SIGTERM);
        drain_until_ = now + std::min(config_.grace_s, 2.0);
      }
      if (!AnyOpenStream() && !HasDescendants()) break;
      if (now >= drain_until_) {
        SignalDescendants(SIGKILL);
        for (Child& c : children_)
          if (c.pid > 0) kill(-c.pid, SIGKILL);
        break;
      }
    } else if (killed_ && now >= give_up_at_) {
      LogError("children still alive " + std::to_string(kAfterKillS) +
               " s after SIGKILL (uninterruptible sleep?); giving up on them");
      break;
    }
    FlushStaleParts(now);

    fds.clear();
    streams.clear();
    fds.push_back({sfd_, POLLIN, 0});
    for (Child& c : children_)
      for (Stream* s : {&c.out, &c.err})
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          streams.push_back(s);
        }
    double wait_s = std::max(0.0, NextDeadline(now) - now);
    timespec ts{static_cast<time_t>(wait_s),
                static_cast<long>((wait_s - static_cast<double>(static_cast<time_t>(wait_s))) * 1e9)};
    int ready = ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (ready < 0 && errno != EINTR) {
      LogError(std::string("ppoll: ") + std::strerror(errno));
      break;
    }
    now = Now();
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) ReadStream(*streams[i - 1], now);
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(sfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
        Signal(static_cast<int>(info.ssi_signo));
    }
    // A SIGCHLD may coalesce with another; reaping is cheap and idempotent.
    Reap();
  }
  return Finish();
}

int Supervisor::Finish() {
  // Drain whatever is still readable, without waiting.
  for (Child& c : children_)
    for (Stream* s : {&c.out, &c.err}) {
      while (s->fd >= 0) {
        pollfd p{s->fd, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) {
          CloseStream(*s);
          break;
        }
        ReadStream(*s, Now());
      }
    }
  if (spawn_failure_code_) return spawn_failure_code_;
  if (!first_failure_) return 0;
  const Child& c = *first_failure_;
  ChildOutcome o;
  o.rank = c.launch.rank;
  o.local_rank = c.launch.local_rank;
  o.node_rank = config_.node_rank;
  o.host = config_.host;
  o.argv = c.launch.argv;
  o.wait_status = c.status;
  o.runtime_s = c.end - c.start;
  o.stderr_tail = c.err_tail;
  if (shim_signal_)
    o.cause = "aml-shim received " + SignalName(shim_signal_) + " and forwarded it";
  std::string summary = FormatFailureSummary(o);
  WriteAll(STDERR_FILENO, summary.data(), summary.size());
  if (config_.log_dir) {
    // First writer wins: on a shared file system the first failing node's
    // report is the one kept.
    std::string final_path = *config_.log_dir + "/failure.json";
    std::string tmp = final_path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::string json = FailureJson(o);
      WriteAll(fd, json.data(), json.size());
      close(fd);
      if (link(tmp.c_str(), final_path.c_str()) != 0 && errno != EEXIST)
        LogWarning("cannot write " + final_path + ": " + std::strerror(errno));
      unlink(tmp.c_str());
    }
  }
  return ExitCodeFor(c.status);
}

}  // namespace

int Supervise(const SupervisorConfig& config) {
  Supervisor s(config);
  return s.Run();
}

}  // namespace aml
