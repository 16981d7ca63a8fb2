#include "launch/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "launch/child.h"
#include "launch/cpu_affinity.h"
#include "launch/descendants.h"
#include "launch/error_file.h"
#include "launch/failure_report.h"
#include "launch/keeper.h"
#include "launch/tagged_procs.h"
#include "launch/line_tagger.h"
#include "launch/log_dir.h"
#include "launch/output_sink.h"
#include "launch/restart_policy.h"
#include "launch/stack_dump.h"
#include "launch/stack_probe.h"
#include "launch/wait_status.h"
#include "shim/base/clock.h"
#include "shim/base/exit_code.h"
#include "shim/base/log.h"
#include "shim/base/units.h"

namespace aml {
namespace {

constexpr size_t kMaxLine = 64 * 1024;        // longer lines are cut
constexpr double kPartialFlushS = 1.0;        // a held partial line waits at most this
constexpr size_t kTailBytes = 16 * 1024;      // stderr kept for the summary
constexpr double kAfterKillS = 5.0;           // wait after SIGKILL before giving up
constexpr size_t kQueueCap = 4 << 20;         // output queued for a slow reader
constexpr ssize_t kDefaultPipe = 64 << 10;    // a pipe's size, unless enlarged
constexpr int kLargePipe = 1 << 20;           // a chatty rank's
constexpr double kFinalFlushS = 5.0;          // the reader's last chance at the end
constexpr double kKeeperGraceS = 10.0;        // SIGTERM to SIGKILL when the shim died
constexpr double kProbeS = 10.0;  // every stack reader at once (py-spy, gdb)
constexpr double kCollectS = 5.0;             // SIGABRT until the stacks are read
constexpr double kSameRequestS = 0.1;         // a repeated signal within this is one request
const int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

double Now() { return MonotonicSeconds(); }

timespec Timeout(double seconds) {
  seconds = std::max(0.0, seconds);
  auto whole = static_cast<time_t>(seconds);
  return {whole, static_cast<long>((seconds - static_cast<double>(whole)) * 1e9)};
}

bool IsTerminating(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

OutputSink* g_err_sink = nullptr;  // aml-shim's own lines while supervising
void QueueLogLine(const std::string& line) { g_err_sink->Write(line); }

struct Stream {
  int fd = -1;
  OutputSink* sink = nullptr;
  bool is_stderr = false;
  size_t child = 0;  // index of its child (and of its log files)
  std::unique_ptr<LineTagger> tagger;
  double partial_since = 0;
  std::string* tail = nullptr;  // stderr only
  bool enlarged = false;        // its pipe was made kLargePipe

  void KeepTail(std::string_view data) {
    if (!tail) return;
    tail->append(data);
    if (tail->size() > 2 * kTailBytes) tail->erase(0, tail->size() - kTailBytes);
  }
};

struct Child {
  const ChildLaunch* launch = nullptr;  // config_.children's
  pid_t pid = -1;
  bool running = false;  // started and not yet reaped: its pid is still ours
  int status = 0;
  double start = 0, end = 0;
  Stream out, err;
  std::string err_tail;
  bool ended_before_collect = false;  // had ended when stacks were asked for
  ProbedStack probed;                 // py-spy's or the native stack, if any
};

// What one attempt of the job holds; a restart starts from a fresh one.
struct Attempt {
  std::vector<Child> children;
  Child* first_failure = nullptr;  // failed before any teardown began
  Child* first_stopped = nullptr;  // failed after aml-shim was signalled
  bool teardown = false;
  double kill_at = 0;              // SIGKILL deadline during teardown
  bool killed = false;
  double give_up_at = 0;           // after SIGKILL, stop waiting
  double drain_until = 0;          // after the last child, wait for its pipes
  double ended_at = 0;             // the last child ended: the reader's 5 s start
  bool stragglers_signalled = false;
  bool stragglers_left = false;    // processes left when the last child ended
  bool drained = false;            // every child and straggler is gone
  bool collecting = false;         // stacks asked for: exits are expected
  double collect_until = 0;        // SIGABRT sent: the dumps' deadline
  bool stacks_sent = false;
  bool told_done = false;          // the control plane knows this node is done
  double first_output_wall = 0;    // the first output (CLOCK_REALTIME)
};

class Supervisor {
 public:
  explicit Supervisor(const SupervisorConfig& c)
      : config_(c), out_sink_(STDOUT_FILENO, kQueueCap), err_sink_(STDERR_FILENO, kQueueCap) {}
  int Run();

 private:
  int Prepare();
  bool Start();
  void Loop();
  bool Step(double now);
  void Poll(double now);
  void Reap();
  void OnExit(Child& c, int status);
  void CopyErrorFile(int rank);
  void ForgetEmptyGroups();
  void NoticeStopped();
  void Signal(int sig, pid_t sender);
  void LauncherGone();
  void StopRequested(int sig, pid_t sender, double now, const std::string& why = "");
  void BeginTeardown(double now);
  void KillAll(int sig);
  void ReadStream(Stream& s, double now);
  void Emit(Stream& s, std::string_view data);
  void CloseStream(Stream& s);
  void FlushStaleParts(double now);
  void CheckSinks(double now);
  double NextDeadline(double now) const;
  bool AnyRunning() const;
  bool AnyOpenStream() const;
  Child* Find(pid_t pid);
  int Finish();
  ChildOutcome Outcome(const Child& c) const;
  void Report(int* code);
  void TakeOrders(double now);
  void CollectStacks();
  void AbortForStacks();
  void SendStacks();
  void DrainStderr(Child& c);
  bool Finished();
  bool Restart(double now);
  void FlushAtExit();

  const SupervisorConfig& config_;
  OutputSink out_sink_, err_sink_;
  std::unique_ptr<LogDir> logs_;
  std::string error_dir_;        // where TORCHELASTIC_ERROR_FILEs go ("": none)
  Keeper keeper_;
  Attempt a_;                     // this attempt's children and their state
  std::vector<pid_t> lingering_;  // groups of reaped children not yet empty
  int sfd_ = -1;
  int spawn_failure_code_ = 0;
  int shim_signal_ = 0;             // terminating signal aml-shim received
  pid_t shim_signal_sender_ = 0;
  double shim_signal_at_ = 0;
  bool reader_gone_ = false;        // stdout/stderr's reader left (EPIPE)
  bool launcher_gone_ = false;      // the lifeline broke (config_.lifeline)
  bool hurry_ = false;              // a second signal: no more waiting
  std::string out_buf_;  // tagged output, reused across reads
  // The control plane (config_.link), when there is one.
  JobLink* link_ = nullptr;
  bool output_seen_ = false;      // a child wrote in this poll round
  StackProbe probe_;              // the readers from outside, before SIGABRT
  std::optional<LinkOrder> stop_;  // the job was stopped by the control plane
  // --max-restarts: the restart ordered by the control plane, once every
  // child's group is empty; the restarts made; the new MASTER_PORT.
  std::optional<LinkOrder> restart_;
  double restart_wait_until_ = 0;
  int restarts_ = 0, master_port_ = 0;
};

// ---- Start

int Supervisor::Prepare() {
  // Signals are handled synchronously through a signalfd: block them first,
  // so none is lost between the spawn and the loop.
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  for (int s : kForwarded) sigaddset(&handled, s);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // A file-size limit (ulimit -f) reached by a log or by stdout is a failed
  // write, reported like a full disk, not the end of aml-shim.
  signal(SIGXFSZ, SIG_IGN);
  signal(SIGTTOU, SIG_IGN);  // for tcsetpgrp from a background group
  sfd_ = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd_ < 0) {
    LogError(std::string("signalfd: ") + std::strerror(errno));
    return kExitShimFailure;
  }
  // Orphaned grandchildren are reparented to us, so we can reap and kill them.
  if (getpid() != 1) prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (config_.log_dir) {
    std::vector<int> ranks;
    for (const ChildLaunch& c : config_.children) ranks.push_back(c.rank);
    auto logs = LogDir::Open(*config_.log_dir, ranks, FailureJsonPrefix(config_.run_id),
                             config_.shim_started);
    if (!logs.ok()) {
      LogError(logs.error().message);
      return kExitShimFailure;
    }
    logs_ = std::move(*logs);
  }
  // The error files' private directory: named first, so that the keeper
  // knows it before it exists (a shim killed at any moment leaves nothing).
  const std::string error_dir = ErrorDirName(config_.tmp_dir);
  // As PID 1 the kernel ends every process of the namespace with us.
  if (getpid() != 1) {
    // The keeper's grace is --grace, at most kKeeperGraceS: the job has
    // already ended for the launcher that killed the shim.
    Status keeper =
        keeper_.Start(config_.children.size(), std::min(config_.grace_s, kKeeperGraceS), error_dir);
    if (!keeper.ok()) {
      LogError(keeper.error().message);
      return kExitShimFailure;
    }
  }
  if (MakeErrorDir(error_dir)) error_dir_ = error_dir;
  return 0;
}

bool Supervisor::Start() {
  a_.children.resize(config_.children.size());
  // Named to the keeper once all are started, in one write.
  std::vector<pid_t> watched;
  struct Named {
    Keeper& keeper;
    std::vector<pid_t>& pids;
    ~Named() { keeper.Watch(pids); }
  } named{keeper_, watched};
  for (size_t i = 0; i < a_.children.size(); ++i) {
    Child& c = a_.children[i];
    c.launch = &config_.children[i];
    EnvSets sets = c.launch->env_sets;
    if (restarts_ > 0) {
      // The new attempt's store port: the old one may still be held.
      sets.emplace_back("MASTER_PORT", std::to_string(master_port_));
      sets.emplace_back("TORCHELASTIC_RESTART_COUNT", std::to_string(restarts_));
    }
    if (!error_dir_.empty())
      sets.emplace_back("TORCHELASTIC_ERROR_FILE", ErrorFilePath(error_dir_, c.launch->rank));
    if (keeper_.running()) {
      // After the tags of any shim above this one: each keeper finds all.
      const std::string above = c.launch->base_env->GetOr(kKeeperTagVar, "");
      sets.emplace_back(kKeeperTagVar, (above.empty() ? "" : above + ":") + keeper_.tag());
    }
    int code = 0;
    Result<SpawnedChild> spawned = Error{""};
    {
      ScopedCpuBinding bind(c.launch->cpus);  // inherited by the child
      spawned = SpawnChild(c.launch->argv, *c.launch->base_env, sets, config_.pipe_output, &code);
    }
    if (!spawned.ok()) {
      LogError(spawned.error().message);
      spawn_failure_code_ = code;
      return false;
    }
    c.pid = spawned->pid;
    watched.push_back(c.pid);
    c.running = true;
    c.start = Now();
    std::string prefix = "[rank " + std::to_string(c.launch->rank) + "] ";
    c.out.child = c.err.child = i;
    c.out.fd = spawned->out_fd;
    c.out.sink = &out_sink_;
    c.err.fd = spawned->err_fd;
    c.err.sink = &err_sink_;
    c.err.is_stderr = true;
    c.err.tail = &c.err_tail;
    if (config_.tag_output) {
      c.out.tagger = std::make_unique<LineTagger>(prefix, kMaxLine);
      c.err.tagger = std::make_unique<LineTagger>(prefix, kMaxLine);
    }
    if (config_.foreground_tty && i == 0 && isatty(STDIN_FILENO))
      tcsetpgrp(STDIN_FILENO, c.pid);
  }
  return true;
}

// ---- Children ending

Child* Supervisor::Find(pid_t pid) {
  for (Child& c : a_.children)
    if (c.pid == pid && c.running) return &c;
  return nullptr;
}

// A terminating signal is followed by SIGCONT (as systemd does): a stopped
// rank (SIGSTOP, ^Z, SIGTTIN) would otherwise keep it pending, never run its
// handler, and be SIGKILLed after --grace.
void Supervisor::KillAll(int sig) {
  const bool terminating = IsTerminating(sig);
  auto send = [&](pid_t target) {
    kill(target, sig);
    if (terminating) kill(target, SIGCONT);
  };
  for (Child& c : a_.children) {
    if (!c.running) continue;
    send(-c.pid);  // unreaped: the group id is still its own
    // A rank that moved itself into another group is not in its own: it
    // gets the signal by its pid (unreaped: still ours).
    if (getpgid(c.pid) != c.pid) send(c.pid);
  }
  if (terminating) keeper_.TermSent(true);
}

void Supervisor::BeginTeardown(double now) {
  if (a_.teardown) return;
  a_.teardown = true;
  a_.kill_at = now + config_.grace_s;
  KillAll(SIGTERM);
}

// --log-dir gets a copy of the rank's error file (its own, in the private
// directory, is what the summary reads): "" removes the copy.
void Supervisor::CopyErrorFile(int rank) {
  const std::string text =
      error_dir_.empty() ? "" : ReadErrorFileText(ErrorFilePath(error_dir_, rank));
  Status st = logs_->CopyErrorFile(rank, text);
  if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
}

void Supervisor::OnExit(Child& c, int status) {
  c.running = false;
  c.status = status;
  c.end = Now();
  if (logs_) CopyErrorFile(c.launch->rank);
  bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  LogVerbose("rank " + std::to_string(c.launch->rank) + " (pid " + std::to_string(c.pid) +
             ") ended: " + DescribeStatus(status));
  if (!failed || a_.collecting) return;
  if (!a_.teardown && !a_.first_failure) {
    a_.first_failure = &c;
    BeginTeardown(c.end);
    if (link_) {
      ChildOutcome o = Outcome(c);
      LocalFailure f;
      f.rank = c.launch->rank;
      f.exit_code = ExitCodeFor(status);
      f.status = DescribeStatus(status);
      f.wall_time = WallSeconds();
      f.summary = FormatFailureSummary(o);
      f.failure_json = FailureJson(o);
      link_->OnChildFailed(f);
    }
  } else if (shim_signal_ && !a_.first_failure && !a_.first_stopped) {
    a_.first_stopped = &c;
  }
}

// Peeks at an ended child before reaping it: while its leader is an unreaped
// zombie, its process group id cannot be recycled, so the stragglers left in
// the group (DataLoader workers, shell pipelines) can be signalled safely.
void Supervisor::Reap() {
  for (;;) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) break;
    const pid_t pid = info.si_pid;
    Child* c = Find(pid);
    if (c) kill(-pid, SIGTERM);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pid == keeper_.pid()) {
      keeper_.Lost();
      LogWarning("the keeper (pid " + std::to_string(pid) + ") ended: " + DescribeStatus(status));
    } else if (c) {
      lingering_.push_back(pid);
      OnExit(*c, status);
    } else {
      // A stack reader (the probe then does not wait for it), or an orphan
      // reparented to us: reaped, nothing more.
      probe_.Reaped(pid);
    }
  }
  ForgetEmptyGroups();
  NoticeStopped();
}

// A rank that reads the terminal from its background process group is
// stopped by SIGTTIN (SIGTTOU for a write with `stty tostop`); the job would
// hang without a word. Said once per stop.
void Supervisor::NoticeStopped() {
  for (;;) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WSTOPPED | WNOHANG) != 0 || info.si_pid == 0) break;
    Child* c = Find(info.si_pid);
    if (!c) continue;
    const int sig = info.si_status;
    std::string why = "stopped by " + SignalName(sig);
    if (sig == SIGTTIN || sig == SIGTTOU)
      why += ": it " + std::string(sig == SIGTTIN ? "read from" : "wrote to") +
             " the terminal, which only the foreground process group may (each rank has a "
             "process group of its own); give it no terminal (< /dev/null), or run one "
             "process in place";
    LogWarning("rank " + std::to_string(c->launch->rank) + " (pid " + std::to_string(c->pid) +
               ") is " + why);
  }
}

// The keeper must never signal a group id that may have been recycled.
void Supervisor::ForgetEmptyGroups() {
  std::vector<pid_t> empty;
  for (size_t i = 0; i < lingering_.size();) {
    if (kill(-lingering_[i], 0) != 0 && errno == ESRCH) {
      empty.push_back(lingering_[i]);
      lingering_[i] = lingering_.back();
      lingering_.pop_back();
    } else {
      ++i;
    }
  }
  keeper_.Forget(empty);
}

// `sender`: the pid that sent it (0: the kernel, e.g. ^C on a terminal).
void Supervisor::Signal(int sig, pid_t sender) {
  if (sig == SIGCHLD) {
    Reap();
    return;
  }
  if (IsTerminating(sig)) {
    const double now = Now();
    if (shim_signal_) {
      // One request sent twice in the same instant by the same sender (GNU
      // timeout signals its child, then the child's whole process group) is
      // one request; anything else is a second one: no more grace.
      if (sig == shim_signal_ && sender == shim_signal_sender_ &&
          now - shim_signal_at_ < kSameRequestS) {
        LogVerbose("received " + SignalName(sig) + " again from the same sender within " +
                   FormatNumber(kSameRequestS * 1000, "%.0f") + " ms: the same request");
        return;
      }
      if (!hurry_ && !a_.killed) {
        LogInfo("second " + SignalName(sig) + ": killing every child now");
        a_.kill_at = now;
      }
      hurry_ = true;
      return;
    }
    LogVerbose("received " + SignalName(sig) + ", forwarding to every child");
    StopRequested(sig, sender, now);
  } else {
    LogVerbose("received " + SignalName(sig) + ", forwarding to every child");
  }
  KillAll(sig);
}

// The launcher stops the job (its signal, or it is gone): every child is
// ended (SIGTERM, SIGKILL after --grace) and no attempt starts after it.
void Supervisor::StopRequested(int sig, pid_t sender, double now, const std::string& why) {
  // No attempt starts after the launcher's signal, whatever was ordered.
  restart_.reset();
  shim_signal_ = sig;
  shim_signal_sender_ = sender;
  shim_signal_at_ = now;
  if (link_) link_->OnShimSignalled(sig, why);
  if (!a_.teardown) {
    a_.teardown = true;
    a_.kill_at = now + config_.grace_s;
  }
}

// The launcher died without a word (SIGKILL, a crash): as if it had sent
// SIGTERM, unless it had (then its grace goes on).
void Supervisor::LauncherGone() {
  launcher_gone_ = true;
  LogVerbose(config_.lifeline->What() + ": ending every child");
  if (shim_signal_) return;
  StopRequested(SIGTERM, 0, Now(), config_.lifeline->What());
  KillAll(SIGTERM);
}

// ---- Output

void Supervisor::Emit(Stream& s, std::string_view data) {
  if (!data.empty()) s.sink->Write(data);
}

void Supervisor::CloseStream(Stream& s) {
  if (s.fd < 0) return;
  std::string out;
  if (s.tagger) s.tagger->Finish(&out);
  Emit(s, out);
  close(s.fd);
  s.fd = -1;
}

void Supervisor::ReadStream(Stream& s, double now) {
  static char buf[256 * 1024];
  ssize_t n = read(s.fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  // A pipe found full (its default 64 KiB) holds a chatty rank: a larger
  // one means fewer wake-ups (best effort; quiet ranks never pay for it).
  if (n >= kDefaultPipe && !s.enlarged) {
    s.enlarged = true;
    fcntl(s.fd, F_SETPIPE_SZ, kLargePipe);
  }
  if (n <= 0) {
    CloseStream(s);
    return;
  }
  std::string_view data(buf, static_cast<size_t>(n));
  output_seen_ = true;
  if (a_.first_output_wall == 0) a_.first_output_wall = WallSeconds();
  if (logs_) logs_->Append(s.child, s.is_stderr, data);
  s.KeepTail(data);
  if (!s.tagger) {
    Emit(s, data);
    return;
  }
  bool had_partial = s.tagger->has_partial();
  out_buf_.clear();
  s.tagger->Feed(data, &out_buf_);
  Emit(s, out_buf_);
  if (s.tagger->has_partial() && (!had_partial || !out_buf_.empty())) s.partial_since = now;
}

void Supervisor::FlushStaleParts(double now) {
  for (Child& c : a_.children) {
    for (Stream* s : {&c.out, &c.err}) {
      if (s->fd < 0 || !s->tagger || !s->tagger->has_partial()) continue;
      if (now - s->partial_since < kPartialFlushS) continue;
      std::string out;
      s->tagger->FlushPartial(&out);
      Emit(*s, out);
    }
  }
}

// A reader that left ends the job, as it would end a pipeline's writer.
void Supervisor::CheckSinks(double now) {
  if (reader_gone_) return;
  for (OutputSink* sink : {&out_sink_, &err_sink_}) {
    if (!sink->broken() || sink->error() != EPIPE) continue;
    reader_gone_ = true;
    const char* which = sink == &out_sink_ ? "stdout" : "stderr";
    if (sink == &out_sink_)
      LogInfo(std::string("the reader of ") + which + " has gone (EPIPE): ending the job");
    if (!a_.teardown) BeginTeardown(now);
    return;
  }
}

// ---- The loop

bool Supervisor::AnyRunning() const {
  for (const Child& c : a_.children)
    if (c.running) return true;
  return false;
}

bool Supervisor::AnyOpenStream() const {
  for (const Child& c : a_.children)
    if (c.out.fd >= 0 || c.err.fd >= 0) return true;
  return false;
}

double Supervisor::NextDeadline(double now) const {
  double next = now + 3600;
  if (a_.teardown && !a_.killed) next = std::min(next, a_.kill_at);
  if (a_.killed) next = std::min(next, a_.give_up_at);
  if (!AnyRunning() && !a_.drained) next = std::min(next, a_.drain_until);
  if (restart_) next = std::min(next, now + 0.01);  // groups still emptying
  if (probe_.running()) next = std::min(next, probe_.deadline());
  else if (a_.collecting && !a_.stacks_sent) next = std::min(next, a_.collect_until);
  if (link_) next = std::min(next, link_->NextDeadline(now));
  if (config_.lifeline && config_.lifeline->watching() && config_.lifeline->fd() < 0 &&
      !launcher_gone_)
    next = std::min(next, now + Lifeline::kCheckS);
  for (const Child& c : a_.children)
    for (const Stream* s : {&c.out, &c.err})
      if (s->fd >= 0 && s->tagger && s->tagger->has_partial())
        next = std::min(next, s->partial_since + kPartialFlushS);
  return next;
}

// Deadlines and endings; false when the loop is done.
bool Supervisor::Step(double now) {
  if (probe_.running() && probe_.Done(now)) AbortForStacks();
  if (a_.collecting && !a_.stacks_sent) SendStacks();
  if (a_.teardown && !a_.killed && now >= a_.kill_at && AnyRunning()) {
    KillAll(SIGKILL);
    a_.killed = true;
    a_.give_up_at = now + kAfterKillS;
  }
  if (AnyRunning()) {
    if (a_.killed && now >= a_.give_up_at) {
      LogError("children still alive " + FormatNumber(kAfterKillS, "%.0f") +
               " s after SIGKILL (uninterruptible sleep?); giving up on them");
      return false;
    }
    return true;
  }
  if (a_.drained) {
    if (Finished()) return false;
    return !restart_ || Restart(now);
  }
  if (!a_.stragglers_signalled) {
    // Every child is gone; end what they left behind (their groups were
    // signalled as each exited; orphans that left the group are ours).
    a_.stragglers_signalled = true;
    a_.ended_at = now;
    // None now is none for good: every child is reaped, so every process
    // left of the job was reparented here, and would have been listed.
    a_.stragglers_left = SignalDescendants(SIGTERM, keeper_.pid());
    a_.drain_until = now + std::min(config_.grace_s, 2.0);
  }
  if (!AnyOpenStream() && !(a_.stragglers_left && HasDescendants(keeper_.pid()))) {
    a_.drained = true;
    return !Finished();
  }
  if (now >= a_.drain_until) {
    SignalDescendants(SIGKILL, keeper_.pid());
    ForgetEmptyGroups();
    for (pid_t g : lingering_) kill(-g, SIGKILL);  // not empty: not recycled
    a_.drained = true;
    return !Finished();
  }
  return true;
}

// Every child and straggler is gone: done, unless the control plane still
// owes the job something (this shim relays for other nodes until they end).
bool Supervisor::Finished() {
  if (!link_) return true;
  if (!a_.told_done) {
    a_.told_done = true;
    NodeOutcome o;
    o.code = spawn_failure_code_;
    if (!o.code && a_.first_failure) o.code = ExitCodeFor(a_.first_failure->status);
    o.first_output_wall = a_.first_output_wall;
    link_->OnChildrenDone(o);
  }
  TakeOrders(Now());
  return !restart_ && link_->MayExit();
}

// ---- The control plane's orders

void Supervisor::TakeOrders(double now) {
  while (std::optional<LinkOrder> order = link_->TakeOrder()) {
    if (order->kind == LinkOrder::Kind::kCollectStacks) {
      if (a_.collecting) continue;
      a_.collecting = true;
      CollectStacks();
      continue;
    }
    if (order->kind == LinkOrder::Kind::kEndAttempt) {
      if (!a_.teardown) BeginTeardown(now);
      continue;
    }
    if (order->kind == LinkOrder::Kind::kRestart) {
      if (!stop_ && !shim_signal_) {
        restart_ = std::move(order);
        restart_wait_until_ = now + kAfterKillS;
      }
      continue;
    }
    restart_.reset();
    if (!stop_) stop_ = std::move(order);
    if (!a_.teardown) BeginTeardown(now);
  }
}

// faulthandler (PYTHONFAULTHANDLER=1) prints every thread's stack on SIGABRT,
// to the rank's stderr, which aml-shim reads; the rank then ends.
void Supervisor::CollectStacks() {
  // First from outside, while every rank still stands where it hung. The
  // readers' output is read by this loop (Poll), which meanwhile goes on
  // forwarding signals, reading the ranks' output and serving the plane.
  std::vector<pid_t> pids;
  for (Child& c : a_.children)
    if (c.running) pids.push_back(c.pid);
  probe_.Start(pids, kProbeS);
  if (probe_.Done(Now())) AbortForStacks();
}

// The readers are done (or out of time): then SIGABRT for faulthandler.
void Supervisor::AbortForStacks() {
  for (ProbedStack& s : probe_.Finish())
    for (Child& c : a_.children)
      if (c.pid == s.pid) c.probed = std::move(s);
  a_.collect_until = Now() + kCollectS;
  for (Child& c : a_.children) {
    if (c.running) kill(c.pid, SIGABRT);  // the rank itself, not its helpers
    else c.ended_before_collect = true;
  }
}

void Supervisor::DrainStderr(Child& c) {
  while (c.err.fd >= 0) {
    pollfd p{c.err.fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) break;
    ReadStream(c.err, Now());
  }
}

void Supervisor::SendStacks() {
  if (probe_.running() || (AnyRunning() && Now() < a_.collect_until)) return;
  a_.stacks_sent = true;
  std::vector<RankStack> stacks;
  for (Child& c : a_.children) {
    DrainStderr(c);
    RankStack r;
    r.rank = c.launch->rank;
    auto dump = ParseFaulthandlerDump(c.err_tail);
    if (!c.probed.frames.empty()) {
      // py-spy or the native frames; faulthandler's dump follows, if any.
      r.text = c.probed.tool + ":\n" + c.probed.text + (dump ? "\n" + dump->text : "");
      r.signature = StackSignature(c.probed.frames);
    } else if (dump) {
      r.text = dump->text;
      r.signature = StackSignature(dump->main_thread);
      if (r.signature.empty()) r.signature = "no Python frame in its main thread";
    } else if (!c.probed.tool.empty() || !c.probed.text.empty()) {
      r.text = "no stack: " + (c.probed.tool.empty() ? "" : c.probed.tool + " printed no frame of "
                                                           "the main thread: ") +
               c.probed.text;
    } else if (c.ended_before_collect) {
      r.text = "no stack: it had already ended (" + DescribeStatus(c.status) + ")\n";
    } else if (c.running) {
      r.text = "no stack: the rank did not end within " + FormatNumber(kCollectS, "%.0f") +
               " s of SIGABRT (blocked in the kernel, or it handles SIGABRT)\n";
    } else {
      r.text = "no Python stack: it ended " + DescribeStatus(c.status) +
               " without a faulthandler dump (not Python, or PYTHONFAULTHANDLER was "
               "turned off)\n";
    }
    if (logs_) {
      Status st = logs_->WriteStack(r.rank, r.text);
      if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
    }
    stacks.push_back(std::move(r));
  }
  link_->OnStacks(stacks);
}

void Supervisor::Poll(double now) {
  std::vector<pollfd> fds{{sfd_, POLLIN, 0}};
  std::vector<Stream*> streams;
  for (OutputSink* sink : {&out_sink_, &err_sink_})
    if (sink->pending()) fds.push_back({sink->poll_fd(), POLLOUT, 0});
  const size_t first_stream = fds.size();
  for (Child& c : a_.children)
    for (Stream* s : {&c.out, &c.err})
      // A full queue: leave the child's pipe unread, so the child waits on
      // its write as it would on a slow reader of its own.
      if (s->fd >= 0 && !s->sink->full()) {
        fds.push_back({s->fd, POLLIN, 0});
        streams.push_back(s);
      }
  const size_t first_probe = fds.size();
  probe_.AddPollFds(&fds);
  const size_t first_link = fds.size();
  if (link_) link_->AddPollFds(&fds);
  const Lifeline* lifeline = launcher_gone_ ? nullptr : config_.lifeline;
  const size_t lifeline_at = fds.size();
  if (lifeline && lifeline->fd() >= 0) fds.push_back({lifeline->fd(), POLLIN, 0});
  timespec ts = Timeout(NextDeadline(now) - now);
  if (ppoll(fds.data(), fds.size(), &ts, nullptr) < 0 && errno != EINTR) {
    LogError(std::string("ppoll: ") + std::strerror(errno));
    a_.kill_at = now;  // nothing sensible left to wait for
    a_.teardown = true;
    return;
  }
  now = Now();
  out_sink_.Flush();
  err_sink_.Flush();
  output_seen_ = false;
  for (size_t i = first_stream; i < first_probe; ++i)
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) ReadStream(*streams[i - first_stream], now);
  probe_.Read(fds.data() + first_probe, first_link - first_probe);
  if (link_) {
    if (output_seen_) link_->OnOutput(now);
    link_->OnPoll(fds.data() + first_link, lifeline_at - first_link, now);
  }
  if (lifeline && (lifeline->fd() < 0 || (fds[lifeline_at].revents & POLLIN)) &&
      lifeline->CheckGone())
    LauncherGone();
  if (fds[0].revents & POLLIN) {
    signalfd_siginfo info;
    while (read(sfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
      Signal(static_cast<int>(info.ssi_signo), static_cast<pid_t>(info.ssi_pid));
  }
  // A SIGCHLD may coalesce with another; reaping is cheap and idempotent.
  Reap();
  CheckSinks(now);
  if (link_) {
    link_->OnTimer(Now());
    TakeOrders(Now());
  }
}

void Supervisor::Loop() {
  for (;;) {
    double now = Now();
    if (!Step(now)) return;
    FlushStaleParts(now);
    Poll(now);
  }
}

int Supervisor::Run() {
  link_ = config_.link;
  if (int code = Prepare()) return code;
  g_err_sink = &err_sink_;
  SetLogSink(QueueLogLine);
  if (!Start()) {
    BeginTeardown(Now());
    a_.kill_at = Now();  // children not yet useful: no grace needed
  }
  Loop();
  int code = Finish();
  // The directory first: a shim killed in between leaves the keeper to
  // remove it. The keeper exits while this one does (reaped at the end).
  if (!error_dir_.empty()) RemoveErrorDir(error_dir_);
  keeper_.Release();
  return code;
}

// ---- Restarts (--max-restarts)

// Every child and straggler of the attempt is gone; once each child's process
// group is empty too, the next attempt starts. False when it cannot.
bool Supervisor::Restart(double now) {
  ForgetEmptyGroups();
  if (!lingering_.empty()) {
    if (now < restart_wait_until_) return true;
    LogError("cannot restart: the process group of an ended rank still has members " +
             FormatNumber(kAfterKillS, "%.0f") + " s after SIGKILL (uninterruptible sleep?)");
    spawn_failure_code_ = kExitShimFailure;
    return false;
  }
  LinkOrder order = std::move(*restart_);
  restart_.reset();
  if (order.print_own_failure && a_.first_failure)
    err_sink_.Write(FormatFailureSummary(Outcome(*a_.first_failure)));
  err_sink_.Write(order.message + order.line);
  restarts_ = order.restart;
  master_port_ = order.master_port;
  for (size_t i = 0; i < a_.children.size(); ++i) {
    if (logs_) {
      // Each log keeps every attempt, the next after this line.
      logs_->Append(i, false, "\n" + order.line);
      logs_->Append(i, true, "\n" + order.line);
    }
    // A stale error file would be read as the next attempt's.
    const int rank = a_.children[i].launch->rank;
    if (!error_dir_.empty()) unlink(ErrorFilePath(error_dir_, rank).c_str());
    if (logs_) CopyErrorFile(rank);
  }
  // The attempt's state, afresh.
  a_ = Attempt{};
  if (probe_.running()) probe_.Finish();
  keeper_.TermSent(false);
  if (!Start()) {
    BeginTeardown(now);
    a_.kill_at = now;
  }
  return true;
}

// ---- The end

void Supervisor::FlushAtExit() {
  // The reader's 5 s count from the last child's end, the wait for the
  // pipes' last bytes included (before: that wait's 2 s, then 5 more).
  const double until = hurry_ ? Now() : (a_.ended_at > 0 ? a_.ended_at : Now()) + kFinalFlushS;
  for (;;) {
    out_sink_.Flush();
    err_sink_.Flush();
    std::vector<pollfd> fds;
    for (OutputSink* sink : {&out_sink_, &err_sink_})
      if (sink->pending()) fds.push_back({sink->poll_fd(), POLLOUT, 0});
    double left = until - Now();
    if (fds.empty() || left <= 0) break;
    timespec ts = Timeout(left);
    ppoll(fds.data(), fds.size(), &ts, nullptr);
  }
  out_sink_.Drop();
  err_sink_.Drop();
  SetLogSink(nullptr);
  size_t lost = out_sink_.dropped() + err_sink_.dropped();
  if (lost > 0 && !err_sink_.broken()) {
    // Why: a write that failed (a full disk, a file-size limit), or a
    // reader that did not take it in time.
    std::string why = "its reader did not take it";
    for (const OutputSink* sink : {&out_sink_, &err_sink_})
      if (sink->broken() && sink->error() != EPIPE && sink->error() != 0)
        why = std::string(sink == &out_sink_ ? "stdout" : "stderr") + ": " +
              std::strerror(sink->error());
    LogWarning(FormatBytes(lost) + " of output could not be written: " + why +
               (logs_ ? " (--log-dir has all of it)" : ""));
  }
}

ChildOutcome Supervisor::Outcome(const Child& c) const {
    ChildOutcome o;
    o.run_id = config_.run_id;
    o.rank = c.launch->rank;
    o.local_rank = c.launch->local_rank;
    o.node_rank = config_.node_rank;
    o.host = config_.host;
    o.argv = c.launch->argv;
    o.wait_status = c.status;
    o.runtime_s = c.end - c.start;
    o.stderr_tail = c.err_tail;
    if (!error_dir_.empty()) {
      if (auto recorded = ReadErrorFile(ErrorFilePath(error_dir_, c.launch->rank))) {
        o.exception = recorded->message;
        o.traceback = recorded->traceback;
      }
    }
    return o;
}

void Supervisor::Report(int* code) {
  // The control plane stopped the job with its words (the job's first
  // failure from another node, the hang's roll-call, or one line saying where
  // they are printed), or this node's own first failure is the job's: its
  // summary, then (with --max-restarts) the attempts.
  const bool stop_says = stop_ && !stop_->message.empty();
  if (stop_says || a_.first_failure) {
    std::optional<ChildOutcome> own;
    if (a_.first_failure) own = Outcome(*a_.first_failure);
    err_sink_.Write(stop_says ? stop_->message : FormatFailureSummary(*own));
    std::string json = stop_ ? stop_->failure_json : "";
    if (json.empty() && own) json = FailureJson(*own);
    if (stop_) {
      err_sink_.Write(stop_->trailer);
      json = WithAttempts(json, stop_->attempts_json, stop_->why_not);
    }
    if (logs_ && !json.empty()) {
      Status st = logs_->WriteFailure(json, !link_ || link_->WritesJobRecord());
      if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
    }
    *code = stop_says ? stop_->exit_code : ExitCodeFor(a_.first_failure->status);
  } else if (launcher_gone_) {
    LogInfo("stopped: " + config_.lifeline->What());
    *code = 128 + SIGTERM;
  } else if (shim_signal_) {
    // Stopped from outside (mpirun, Slurm, ^C): say so in one line; the
    // rank that failed first, if any, was on another node.
    std::string line = "stopped: aml-shim received " + SignalName(shim_signal_) +
                       " and forwarded it to its " + std::to_string(a_.children.size()) +
                       (a_.children.size() == 1 ? " child" : " children");
    if (a_.first_stopped) {
      line += "; rank " + std::to_string(a_.first_stopped->launch->rank) + " ended first, with " +
              DescribeStatus(a_.first_stopped->status);
      *code = ExitCodeFor(a_.first_stopped->status);
    }
    LogInfo(line);
  } else if (reader_gone_) {
    *code = 128 + SIGPIPE;
  }
  if (logs_ && !logs_->losses().empty()) {
    std::string all;
    for (const std::string& l : logs_->losses()) all += (all.empty() ? "" : ", ") + l;
    LogWarning("--log-dir " + logs_->path() + " is incomplete: " + all);
  }
}

int Supervisor::Finish() {
  // Drain whatever is still readable, without waiting.
  for (Child& c : a_.children)
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
  int code = spawn_failure_code_;
  if (!code) Report(&code);
  FlushAtExit();
  return code;
}

}  // namespace

int Supervise(const SupervisorConfig& config) {
  Supervisor s(config);
  return s.Run();
}

}  // namespace aml
