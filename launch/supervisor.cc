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
#include "launch/flight/fr_env.h"
#include "launch/flight/fr_harvest.h"
#include "launch/flight/nccl_ras.h"
#include "launch/flight/waited.h"
#include "launch/keeper.h"
#include "launch/tagged_procs.h"
#include "launch/line_tagger.h"
#include "launch/log_dir.h"
#include "launch/node_machine.h"
#include "launch/output_sink.h"
#include "launch/restart_policy.h"
#include "launch/stack_dump.h"
#include "launch/stack_probe.h"
#include "launch/wait_status.h"
#include "shim/base/clock.h"
#include "shim/base/exit_code.h"
#include "shim/base/log.h"
#include "shim/base/proc_tree.h"
#include "shim/base/read_no_follow.h"
#include "shim/base/units.h"
#include "shim/base/version.h"

namespace aml {
namespace {

constexpr size_t kMaxLine = 64 * 1024;        // longer lines are cut
constexpr double kPartialFlushS = 1.0;        // a held partial line waits at most this
constexpr size_t kTailBytes = 16 * 1024;      // stderr kept for the summary
constexpr size_t kQueueCap = 4 << 20;         // output queued for a slow reader
constexpr ssize_t kDefaultPipe = 64 << 10;    // a pipe's size, unless enlarged
constexpr int kLargePipe = 1 << 20;           // a chatty rank's
constexpr double kFinalFlushS = 5.0;          // the reader's last chance at the end
constexpr double kKeeperGraceS = 10.0;        // SIGTERM to SIGKILL when the shim died
constexpr double kProbeS = 10.0;  // every stack reader at once (py-spy, gdb)
constexpr double kRasTimeoutS = 5;  // NCCL's RAS socket, asked at a hang
const int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

double Now() { return MonotonicSeconds(); }

timespec Timeout(double seconds) {
  seconds = std::max(0.0, seconds);
  auto whole = static_cast<time_t>(seconds);
  return {whole, static_cast<long>((seconds - static_cast<double>(whole)) * 1e9)};
}

// ppoll, whose readiness is no older than kDescheduledS when it returns: a
// shim stopped or descheduled after the kernel looked (a frozen node, a busy
// machine) looks again at once, so that what came meanwhile is read before
// any timer judges a link silent (a woken root read the one descriptor
// ready before its stop, found every child "silent for 61 s" and said "no
// majority" with its heir's word unread: tests/e2e/test_busy_root.py in CI).
// A few looks at most: a machine that busy still reads.
int PollFresh(std::vector<pollfd>* fds, double wait_s) {
  for (int look = 0;; ++look) {
    const double called = Now();
    timespec ts = Timeout(wait_s);
    const int n = ppoll(fds->data(), fds->size(), &ts, nullptr);
    if (n < 0 || look == 3 || Now() - called <= std::max(0.0, wait_s) + kDescheduledS) return n;
    for (pollfd& f : *fds) f.revents = 0;
    wait_s = 0;
  }
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

// A child's process and output; its life (running, status, times) is the
// machine's (node_machine.h).
struct Child {
  const ChildLaunch* launch = nullptr;  // launches_'s
  pid_t pid = -1;
  Stream out, err;
  std::string err_tail;
  ProbedStack probed;  // py-spy's or the native stack, if any
  std::optional<FlightFiles> fr;  // its flight recorder's pipe and dump (none: off)
};

// The process table of the node's machine (node_machine.h) over real
// processes: the one spawn site, signals to process groups, reaping, the
// keeper, the ranks' output and their stacks. The machine decides; this
// loop waits in ppoll and tells it what happened.
class Supervisor : private NodeProcs {
 public:
  explicit Supervisor(const SupervisorConfig& c)
      : config_(c),
        out_sink_(STDOUT_FILENO, kQueueCap),
        err_sink_(STDERR_FILENO, kQueueCap),
        launches_(c.children),
        node_rank_(c.standby ? -1 : c.node_rank),
        machine_(NodeConfig{c.children.size(), c.grace_s, c.standby, c.look_every_s,
                            c.flight_recorder},
                 this, c.link) {}
  int Run();

 private:
  int Prepare();
  void Loop();
  void Poll(double now);
  void Reap();
  void OnExit(size_t i, int status, double now);
  void CopyErrorFile(int rank);
  void ForgetEmptyGroups();
  void NoticeStopped();
  void Signal(int sig, pid_t sender);
  void LauncherGone();
  void ReadStream(Stream& s, double now);
  void Emit(Stream& s, std::string_view data);
  void CloseStream(Stream& s);
  void FlushStaleParts(double now);
  void CheckSinks(double now);
  double NextDeadline(double now) const;
  bool AnyOpenStream() const;
  std::optional<size_t> Find(pid_t pid) const;
  int Finish();
  ChildOutcome Outcome(size_t i) const;
  void Report();
  void DrainStderr(Child& c);
  void FlushAtExit();
  void WatchStarted();
  void KeepFlightRecord(RankStack* r);
  void KeepDump(const FlightHarvest::Outcome& o);
  std::string MetricsText() const;

  // NodeProcs.
  bool Start(size_t child, const LinkOrder* restart, int* code) override;
  void Signal(size_t child, int sig) override;
  void Abort(size_t child) override;
  bool SignalStragglers(int sig) override;
  bool StragglersLeft() override;
  bool OutputOpen() const override { return AnyOpenStream(); }
  bool GroupsEmpty() override;
  void KillGroups() override;
  void StartDumps(double now, DumpAsk ask) override;
  int64_t DumpsProgress(int* answered) const override;
  std::vector<RankTimes> DumpsTimes() const override;
  double StartingCpuS() const override;
  bool DumpsDone(double now) override { return harvest_.Poll(now) && ras_.Done(); }
  double DumpsNext(double now) const override {
    return harvest_.done() ? now + FlightHarvest::kPollS
                           : std::min(now + FlightHarvest::kPollS, harvest_.deadline());
  }
  void StartProbe() override;
  bool ProbeRunning() const override { return probe_.running(); }
  bool ProbeDone(double now) override { return !probe_.running() || probe_.Done(now); }
  double ProbeDeadline() const override { return probe_.deadline(); }
  void FinishProbe() override;
  LocalFailure Failure(size_t child) override;
  std::vector<RankStack> Stacks() override;
  std::vector<RankRecord> Records() override;
  double FirstOutputWall() const override { return first_output_wall_; }
  void TermSent(bool sent) override { keeper_.TermSent(sent); }
  void BeginRestart(const LinkOrder& restart, bool print_own_failure) override;

  const SupervisorConfig& config_;
  OutputSink out_sink_, err_sink_;
  std::unique_ptr<LogDir> logs_;
  std::string error_dir_;        // where TORCHELASTIC_ERROR_FILEs go ("": none)
  Keeper keeper_;
  std::vector<Child> children_;   // this attempt's processes and their output
  std::vector<pid_t> lingering_;  // groups of reaped children not yet empty
  std::vector<pid_t> to_watch_;   // started, not yet named to the keeper
  int sfd_ = -1;
  bool reader_gone_ = false;      // stdout/stderr's reader left (EPIPE)
  bool launcher_gone_ = false;    // the lifeline broke (config_.lifeline)
  std::string out_buf_;  // tagged output, reused across reads
  // The control plane (config_.link), when there is one.
  JobLink* link_ = nullptr;
  bool output_seen_ = false;      // a child wrote in this poll round
  double first_output_wall_ = 0;  // this attempt's first output (CLOCK_REALTIME)
  StackProbe probe_;              // the readers from outside, before SIGABRT
  FlightHarvest harvest_;         // the ranks' flight records, before them
  NcclRasQuery ras_;              // and NCCL's RAS socket, at the same time
  bool flight_ = false;           // the recorder's directories were made
  // What each child of this node runs, and the node's NODE_RANK (-1: none
  // in this attempt): both change when a spare takes a retired node's place.
  std::vector<ChildLaunch> launches_;
  int node_rank_ = 0;
  NodeMachine machine_;           // what is done when (node_machine.h)
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
    // A spare writes no rank's log until it takes a node's place.
    if (!config_.standby)
      for (const ChildLaunch& c : launches_) ranks.push_back(c.rank);
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
  // The caller names it when the ranks' variables name it too.
  const std::string error_dir =
      config_.private_dir.empty() ? ErrorDirName(config_.tmp_dir) : config_.private_dir;
  // As PID 1 the kernel ends every process of the namespace with us.
  if (getpid() != 1) {
    // The keeper's grace is --grace, at most kKeeperGraceS: the job has
    // already ended for the launcher that killed the shim.
    Status keeper =
        keeper_.Start(launches_.size(), std::min(config_.grace_s, kKeeperGraceS), error_dir);
    if (!keeper.ok()) {
      LogError(keeper.error().message);
      return kExitShimFailure;
    }
  }
  if (MakeErrorDir(error_dir)) error_dir_ = error_dir;
  if (config_.flight_recorder) {
    // The agent, and the first attempt's pipes and dumps
    // (docs/control-plane.md, "Naming the culprit").
    Status st = error_dir_.empty() ? Status(Error{"cannot make " + error_dir})
                                   : MakeFlightAgent(error_dir_);
    if (st.ok()) st = MakeFlightAttemptDir(error_dir_, 0);
    if (st.ok()) flight_ = true;
    else LogWarning("--flight-recorder: " + st.error().message + "; a hang's culprit is not named");
  }
  children_.resize(launches_.size());
  return 0;
}

// The children started are named to the keeper together, in one write.
void Supervisor::WatchStarted() {
  if (to_watch_.empty()) return;
  keeper_.Watch(to_watch_);
  to_watch_.clear();
}

bool Supervisor::Start(size_t i, const LinkOrder* restart, int* code) {
  Child& c = children_[i];
  c = Child{};
  if (i >= launches_.size()) {  // a spare's new NODE_RANK could not be planned (said)
    *code = kExitShimFailure;
    return false;
  }
  c.launch = &launches_[i];
  EnvSets sets = c.launch->env_sets;
  const bool node = c.launch->node_launcher;
  // NODE_RANK 0 moved to another node (--spares): the store is there.
  if (restart && restart->roster && !restart->master_addr.empty()) {
    sets.emplace_back("MASTER_ADDR", restart->master_addr);
    if (node) sets.emplace_back("PET_MASTER_ADDR", restart->master_addr);
  }
  if (restart) {
    // The new attempt's store port: the old one may still be held.
    sets.emplace_back("MASTER_PORT", std::to_string(restart->master_port));
    if (node) sets.emplace_back("PET_MASTER_PORT", std::to_string(restart->master_port));
    else sets.emplace_back("TORCHELASTIC_RESTART_COUNT", std::to_string(restart->restart));
  }
  if (!error_dir_.empty() && !node)
    sets.emplace_back("TORCHELASTIC_ERROR_FILE", ErrorFilePath(error_dir_, c.launch->rank));
  if (flight_ && !node) {
    // A restart's flight records go to its own directory.
    if (restart) {
      ContractBuilder b(*c.launch->base_env);
      AddFlightVars(*c.launch->base_env, error_dir_, restart->restart, &b);
      for (auto& set : ContractSets(b.vars())) sets.push_back(std::move(set));
    }
    c.fr = FlightFilesOf(*c.launch->base_env, sets, c.launch->rank);
  }
  if (keeper_.running()) {
    // After the tags of any shim above this one: each keeper finds all.
    const std::string above = c.launch->base_env->GetOr(kKeeperTagVar, "");
    sets.emplace_back(kKeeperTagVar, (above.empty() ? "" : above + ":") + keeper_.tag());
  }
  Result<SpawnedChild> spawned = Error{""};
  {
    ScopedCpuBinding bind(c.launch->cpus);  // inherited by the child
    spawned = SpawnChild(c.launch->argv, *c.launch->base_env, sets, config_.pipe_output, code);
  }
  if (!spawned.ok()) {
    LogError(spawned.error().message);
    WatchStarted();
    return false;
  }
  c.pid = spawned->pid;
  to_watch_.push_back(c.pid);
  std::string prefix =
      (node ? "[node " : "[rank ") + std::to_string(c.launch->rank) + "] ";
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
  if (i + 1 == children_.size()) WatchStarted();
  return true;
}

// ---- Children ending

std::optional<size_t> Supervisor::Find(pid_t pid) const {
  for (size_t i = 0; i < children_.size(); ++i)
    if (children_[i].pid == pid && machine_.running(i)) return i;
  return std::nullopt;
}

// A terminating signal is followed by SIGCONT (as systemd does): a stopped
// rank (SIGSTOP, ^Z, SIGTTIN) would otherwise keep it pending, never run its
// handler, and be SIGKILLed after --grace.
void Supervisor::Signal(size_t i, int sig) {
  const pid_t pid = children_[i].pid;
  const bool terminating = IsTerminating(sig);
  auto send = [&](pid_t target) {
    kill(target, sig);
    if (terminating) kill(target, SIGCONT);
  };
  send(-pid);  // unreaped: the group id is still its own
  // A rank that moved itself into another group is not in its own: it
  // gets the signal by its pid (unreaped: still ours).
  if (getpgid(pid) != pid) send(pid);
}

void Supervisor::Abort(size_t i) { kill(children_[i].pid, SIGABRT); }

bool Supervisor::SignalStragglers(int sig) { return SignalDescendants(sig, keeper_.pid()); }

bool Supervisor::StragglersLeft() { return HasDescendants(keeper_.pid()); }

bool Supervisor::GroupsEmpty() {
  ForgetEmptyGroups();
  return lingering_.empty();
}

void Supervisor::KillGroups() {
  ForgetEmptyGroups();
  for (pid_t g : lingering_) kill(-g, SIGKILL);  // not empty: not recycled
}

// --log-dir gets a copy of the rank's error file (its own, in the private
// directory, is what the summary reads): "" removes the copy.
void Supervisor::CopyErrorFile(int rank) {
  const std::string text =
      error_dir_.empty() ? "" : ReadErrorFileText(ErrorFilePath(error_dir_, rank));
  Status st = logs_->CopyErrorFile(rank, text);
  if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
}

void Supervisor::OnExit(size_t i, int status, double now) {
  Child& c = children_[i];
  if (logs_) CopyErrorFile(c.launch->rank);
  LogVerbose("rank " + std::to_string(c.launch->rank) + " (pid " + std::to_string(c.pid) +
             ") ended: " + DescribeStatus(status));
  machine_.OnExit(i, status, now);
}

LocalFailure Supervisor::Failure(size_t i) {
  ChildOutcome o = Outcome(i);
  LocalFailure f;
  f.rank = children_[i].launch->rank;
  f.exit_code = ExitCodeFor(machine_.status(i));
  f.status = DescribeStatus(machine_.status(i));
  f.wall_time = WallSeconds();
  f.summary = FormatFailureSummary(o);
  f.failure_json = FailureJson(o);
  return f;
}

// Peeks at an ended child before reaping it: while its leader is an unreaped
// zombie, its process group id cannot be recycled, so the stragglers left in
// the group (DataLoader workers, shell pipelines) can be signalled safely.
void Supervisor::Reap() {
  for (;;) {
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) break;
    const pid_t pid = info.si_pid;
    const std::optional<size_t> i = Find(pid);
    if (i) kill(-pid, SIGTERM);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pid == keeper_.pid()) {
      keeper_.Lost();
      LogWarning("the keeper (pid " + std::to_string(pid) + ") ended: " + DescribeStatus(status));
    } else if (i) {
      lingering_.push_back(pid);
      OnExit(*i, status, Now());
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
    const std::optional<size_t> i = Find(info.si_pid);
    if (!i) continue;
    const Child& c = children_[*i];
    const int sig = info.si_status;
    std::string why = "stopped by " + SignalName(sig);
    if (sig == SIGTTIN || sig == SIGTTOU)
      why += ": it " + std::string(sig == SIGTTIN ? "read from" : "wrote to") +
             " the terminal, which only the foreground process group may (each rank has a "
             "process group of its own); give it no terminal (< /dev/null), or run one "
             "process in place";
    LogWarning("rank " + std::to_string(c.launch->rank) + " (pid " + std::to_string(c.pid) +
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
  machine_.OnSignal(sig, sender, Now());
}

// The launcher died without a word (SIGKILL, a crash): as if it had sent
// SIGTERM, unless it had (then its grace goes on).
void Supervisor::LauncherGone() {
  launcher_gone_ = true;
  machine_.OnLauncherGone(config_.lifeline->What(), Now());
}

// ---- Stacks (a hang's roll-call)

// The readers from outside, while every rank still stands where it hung.
// Their output is read by this loop (Poll), which meanwhile goes on
// forwarding signals, reading the ranks' output and serving the plane.
void Supervisor::StartProbe() {
  std::vector<pid_t> pids;
  for (size_t i = 0; i < children_.size(); ++i)
    if (machine_.running(i)) pids.push_back(children_[i].pid);
  probe_.Start(pids, kProbeS);
}

void Supervisor::StartDumps(double now, DumpAsk ask) {
  const bool verdict = ask == DumpAsk::kVerdict;
  std::vector<FlightHarvest::Ask> asks;
  for (size_t i = 0; i < children_.size() && node_rank_ >= 0; ++i) {
    const Child& c = children_[i];
    if (!c.launch) continue;
    asks.push_back({c.launch->rank, flight_ ? c.fr : std::nullopt, machine_.running(i)});
  }
  harvest_.Start(asks, now, config_.dump_timeout_s, ask == DumpAsk::kLook);
  // NCCL's RAS socket, where this node's NCCL keeps one (NCCL 2.24 on).
  if (verdict && flight_ && !asks.empty() && !launches_.empty()) {
    const EnvSnapshot& env = *launches_[0].base_env;
    if (env.GetOr("NCCL_RAS_ENABLE", "1") != "0")
      ras_.Start(env.GetOr("NCCL_RAS_ADDR", "localhost:28028"), kRasTimeoutS);
  }
}

int64_t Supervisor::DumpsProgress(int* answered) const {
  int64_t sum = 0;
  *answered = 0;
  for (const FlightHarvest::Outcome& o : harvest_.outcomes()) {
    if (!o.fr) continue;
    ++*answered;
    for (const FrGroup& g : o.fr->groups) sum += std::max<int64_t>(0, g.completed);
  }
  return sum;
}

std::vector<RankTimes> Supervisor::DumpsTimes() const {
  std::vector<RankTimes> out;
  for (const FlightHarvest::Outcome& o : harvest_.outcomes())
    if (o.fr && !o.times.empty()) out.push_back({o.rank, o.times});
  return out;
}

// A rank is starting while its flight-recorder pipe is not there (torch,
// or aml-shim's agent, makes it as its process group is up) and its agent
// said nothing but that it is still starting: an agent's other word (torch
// without a recorder, a dump that failed) comes once the group is up.
double Supervisor::StartingCpuS() const {
  double sum = -1;
  for (size_t i = 0; i < children_.size(); ++i) {
    const Child& c = children_[i];
    if (!flight_ || !c.fr || !machine_.running(i)) continue;
    struct stat st {};
    if (lstat(c.fr->pipe.c_str(), &st) == 0 || errno != ENOENT) continue;
    const std::string why = ReadNoFollow(AT_FDCWD, c.fr->why, sizeof kStillStartingWhy);
    if (!why.empty() && why.rfind(kStillStartingWhy, 0) != 0) continue;
    if (auto cpu = ProcCpuSeconds(c.pid)) sum = std::max(sum, 0.0) + *cpu;
  }
  return sum;
}

void Supervisor::FinishProbe() {
  if (!probe_.running()) return;
  for (ProbedStack& s : probe_.Finish())
    for (Child& c : children_)
      if (c.pid == s.pid) c.probed = std::move(s);
}

void Supervisor::DrainStderr(Child& c) {
  while (c.err.fd >= 0) {
    pollfd p{c.err.fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) break;
    ReadStream(c.err, Now());
  }
}

// faulthandler (PYTHONFAULTHANDLER=1) printed every thread's stack on
// SIGABRT, to the rank's stderr, which aml-shim reads.
std::vector<RankStack> Supervisor::Stacks() {
  std::vector<RankStack> stacks;
  // A spare, or a node retired (--spares), runs no ranks in this attempt:
  // it reports none (the ranks it ran before are another node's now).
  if (node_rank_ < 0) return stacks;
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (!c.launch) continue;  // never started
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
      // No Python frame left: the rank was ending by an exception as
      // SIGABRT came (its collective raised when a rank of another node was
      // ended first): where it was is its traceback.
      const std::vector<StackFrame> raised =
          dump->main_thread.empty()
              ? ParseLastTraceback(std::string_view(c.err_tail).substr(
                    0, c.err_tail.rfind("Fatal Python error")))
              : std::vector<StackFrame>{};
      if (!raised.empty()) {
        r.signature = StackSignature(raised);
        r.text = "its last traceback (it was ending by an exception as SIGABRT came):\n" +
                 r.text;
      }
      if (r.signature.empty()) r.signature = "no Python frame in its main thread";
    } else if (!c.probed.tool.empty() || !c.probed.text.empty()) {
      r.text = "no stack: " + (c.probed.tool.empty() ? "" : c.probed.tool + " printed no frame of "
                                                           "the main thread: ") +
               c.probed.text;
    } else if (machine_.ended_before_collect(i)) {
      r.text = "no stack: it had already ended (" + DescribeStatus(machine_.status(i)) + ")\n";
    } else if (machine_.running(i)) {
      r.text = "no stack: the rank did not end within " +
               FormatNumber(NodeMachine::kCollectS, "%.0f") +
               " s of SIGABRT (blocked in the kernel, or it handles SIGABRT)\n";
    } else {
      r.text = "no Python stack: it ended " + DescribeStatus(machine_.status(i)) +
               " without a faulthandler dump (not Python, or PYTHONFAULTHANDLER was "
               "turned off)\n";
    }
    if (logs_) {
      Status st = logs_->WriteStack(r.rank, r.text);
      if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
    }
    KeepFlightRecord(&r);
    stacks.push_back(std::move(r));
  }
  if (!stacks.empty() && ras_.Done()) {
    stacks[0].ras = ras_.line();
    if (!ras_.why().empty()) LogVerbose("NCCL RAS: " + ras_.why());
  }
  return stacks;
}

// The rank's flight record, as the harvest left it; its dump kept in
// --log-dir as torchfrtrace reads it (FlightRecordName).
void Supervisor::KeepFlightRecord(RankStack* r) {
  for (const FlightHarvest::Outcome& o : harvest_.outcomes()) {
    if (o.rank != r->rank) continue;
    r->fr = o.fr;
    r->fr_why = o.why;
    return KeepDump(o);
  }
}

void Supervisor::KeepDump(const FlightHarvest::Outcome& o) {
  if (!logs_ || o.dump.empty()) return;
  const std::string dump = ReadNoFollow(AT_FDCWD, o.dump, kMaxFrDump);
  Status st = logs_->KeepFile(FlightRecordName(machine_.restarts() + 1, o.rank), dump);
  if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
}

// A failure's records (node_machine.h): each rank's, as the harvest left
// it, its dump kept in --log-dir as for a hang.
std::vector<RankRecord> Supervisor::Records() {
  std::vector<RankRecord> out;
  if (node_rank_ < 0) return out;  // a spare's: no ranks of the job here
  for (const FlightHarvest::Outcome& o : harvest_.outcomes()) {
    out.push_back({o.rank, o.fr, o.why});
    if (!o.fr) LogVerbose("rank " + std::to_string(o.rank) + ": no flight record: " + o.why);
    KeepDump(o);
  }
  return out;
}

// ---- Metrics (--metrics-addr, docs/metrics.md)

// This node's, then the job's as its control plane knows it. No secret and
// nothing from the environment: names, counts, states, the ranks' statuses.
std::string Supervisor::MetricsText() const {
  PromText t;
  const double now = Now();
  t.Family("aml_shim_info", "gauge", "1, labelled with this shim's host, NODE_RANK and version");
  t.Sample("aml_shim_info", {{"host", config_.host}, {"node_rank", std::to_string(node_rank_)},
                             {"version", kVersion}}, 1);
  t.Family("aml_shim_node_state", "gauge", "1 for the state this node's supervisor is in");
  t.Sample("aml_shim_node_state", {{"state", NodeStateName(machine_.state())}}, 1);
  t.Family("aml_shim_attempt", "gauge", "the attempt this node runs (1, then 2 after a restart)");
  t.Sample("aml_shim_attempt", machine_.restarts() + 1);
  t.Family("aml_shim_rank_running", "gauge", "1 while the rank runs in this attempt");
  std::vector<std::pair<int, double>> codes;
  for (size_t i = 0; i < children_.size(); ++i) {
    if (!children_[i].launch || node_rank_ < 0) continue;
    const std::string rank = std::to_string(children_[i].launch->rank);
    t.Sample("aml_shim_rank_running", {{"rank", rank}}, machine_.running(i) ? 1 : 0);
    if (!machine_.running(i) && machine_.ended(i) > 0)
      codes.emplace_back(children_[i].launch->rank, ExitCodeFor(machine_.status(i)));
  }
  t.Family("aml_shim_rank_exit_code", "gauge",
           "the exit code aml-shim gives for the rank's end in this attempt (absent while it runs)");
  for (const auto& [rank, code] : codes)
    t.Sample("aml_shim_rank_exit_code", {{"rank", std::to_string(rank)}}, code);
  t.Family("aml_shim_output_age_seconds", "gauge", "seconds since a rank of this node last wrote");
  t.Sample("aml_shim_output_age_seconds", std::max(0.0, now - machine_.last_output()));
  // The last look at the ranks' flight records (with the recorder).
  t.Family("aml_shim_rank_collectives_completed", "gauge",
           "the last collective the rank completed in each process group, at the last look at "
           "its flight record");
  for (const FlightHarvest::Outcome& o : harvest_.outcomes())
    if (o.fr)
      for (const FrGroup& g : o.fr->groups)
        t.Sample("aml_shim_rank_collectives_completed",
                 {{"rank", std::to_string(o.rank)}, {"group", g.pg}, {"desc", g.desc}},
                 static_cast<double>(std::max<int64_t>(0, g.completed)));
  if (link_) link_->AppendMetrics(&t, now);
  return t.str();
}

// ---- Restarts (--max-restarts)

// Every rank, straggler and process group of the attempt is gone: the
// restart's words, then each log and error file ready for the next attempt.
void Supervisor::BeginRestart(const LinkOrder& order, bool print_own_failure) {
  // The failure ends this attempt, not the job: its banner says so.
  const std::string title =
      "attempt " + std::to_string(order.restart) + " failed: restarting";
  if (print_own_failure)
    err_sink_.Write(RetitleSummary(FormatFailureSummary(Outcome(*machine_.first_failure())), title));
  err_sink_.Write(RetitleSummary(order.message, title) + order.line);
  for (size_t i = 0; i < children_.size() && node_rank_ >= 0; ++i) {
    if (logs_) {
      // Each log keeps every attempt, the next after this line.
      logs_->Append(i, false, "\n" + order.line);
      logs_->Append(i, true, "\n" + order.line);
    }
    // A stale error file would be read as the next attempt's.
    const int rank = launches_[i].rank;
    if (!error_dir_.empty()) unlink(ErrorFilePath(error_dir_, rank).c_str());
    if (logs_) CopyErrorFile(rank);
  }
  first_output_wall_ = 0;
  if (flight_) {
    // The ended attempt's pipes and dumps go (what a hang harvested is kept
    // in --log-dir); the next attempt's directory is made.
    RemoveFlightAttemptDir(error_dir_, order.restart - 1);
    Status st = MakeFlightAttemptDir(error_dir_, order.restart);
    if (!st.ok()) LogWarning("--flight-recorder: " + st.error().message);
  }
  if (!order.roster || order.node_rank == node_rank_) return;
  // --spares: this node takes a retired node's NODE_RANK (its ranks' RANK
  // block), or it was retired and runs none.
  node_rank_ = order.node_rank;
  if (node_rank_ >= 0 && config_.replan) launches_ = config_.replan(node_rank_);
  if (logs_) {
    std::vector<int> ranks;
    if (node_rank_ >= 0)
      for (const ChildLaunch& c : launches_) ranks.push_back(c.rank);
    Status st = logs_->Reassign(ranks);
    if (!st.ok()) LogWarning(st.error().message + "; this node's ranks are not logged");
  }
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
  if (first_output_wall_ == 0) first_output_wall_ = WallSeconds();
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
  for (Child& c : children_) {
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
    machine_.OnReaderGone(now);
    return;
  }
}

// ---- The loop

bool Supervisor::AnyOpenStream() const {
  for (const Child& c : children_)
    if (c.out.fd >= 0 || c.err.fd >= 0) return true;
  return false;
}

double Supervisor::NextDeadline(double now) const {
  double next = machine_.NextDeadline(now);
  if (link_) next = std::min(next, link_->NextDeadline(now));
  if (config_.metrics) next = std::min(next, config_.metrics->NextDeadline());
  if (config_.lifeline && config_.lifeline->watching() && config_.lifeline->fd() < 0 &&
      !launcher_gone_)
    next = std::min(next, now + Lifeline::kCheckS);
  for (const Child& c : children_)
    for (const Stream* s : {&c.out, &c.err})
      if (s->fd >= 0 && s->tagger && s->tagger->has_partial())
        next = std::min(next, s->partial_since + kPartialFlushS);
  return next;
}

void Supervisor::Poll(double now) {
  std::vector<pollfd> fds{{sfd_, POLLIN, 0}};
  std::vector<Stream*> streams;
  for (OutputSink* sink : {&out_sink_, &err_sink_})
    if (sink->pending()) fds.push_back({sink->poll_fd(), POLLOUT, 0});
  const size_t first_stream = fds.size();
  for (Child& c : children_)
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
  const size_t first_metrics = fds.size();
  if (config_.metrics) config_.metrics->AddPollFds(&fds);
  if (PollFresh(&fds, NextDeadline(now) - now) < 0) {
    if (errno != EINTR) {
      LogError(std::string("ppoll: ") + std::strerror(errno));
      machine_.OnFatal(now);  // nothing sensible left to wait for
      return;
    }
    // Interrupted (a stop and a continue: SIGSTOP, a frozen node, a
    // debugger): nothing was read, so no timer runs on stale readiness; the
    // next round reads what came meanwhile first (a root woken after a
    // minute found every child "silent for 60 s" before reading its heir's
    // word, tests/e2e/test_busy_root.py).
    return;
  }
  now = Now();
  out_sink_.Flush();
  err_sink_.Flush();
  output_seen_ = false;
  for (size_t i = first_stream; i < first_probe; ++i)
    if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) ReadStream(*streams[i - first_stream], now);
  probe_.Read(fds.data() + first_probe, first_link - first_probe);
  if (output_seen_) machine_.NoteOutput(now);
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
  if (config_.metrics) {
    config_.metrics->OnPoll(fds.data() + first_metrics, fds.size() - first_metrics, Now(),
                            [this] { return MetricsText(); });
    config_.metrics->OnTimer(Now());
  }
  if (link_) {
    link_->OnTimer(Now());
    machine_.TakeOrders(Now());
  }
}

void Supervisor::Loop() {
  for (;;) {
    double now = Now();
    if (!machine_.Step(now)) return;
    FlushStaleParts(now);
    Poll(now);
  }
}

int Supervisor::Run() {
  link_ = config_.link;
  if (int code = Prepare()) return code;
  g_err_sink = &err_sink_;
  SetLogSink(QueueLogLine);
  machine_.Start(Now());
  Loop();
  int code = Finish();
  // The directory first: a shim killed in between leaves the keeper to
  // remove it. The keeper exits while this one does (reaped at the end).
  if (!error_dir_.empty()) RemoveErrorDir(error_dir_);
  keeper_.Release();
  return code;
}

// ---- The end

void Supervisor::FlushAtExit() {
  // The reader's 5 s count from the last child's end, the wait for the
  // pipes' last bytes included (before: that wait's 2 s, then 5 more).
  const double ended = machine_.ended_at();
  const double until = machine_.hurry() ? Now() : (ended > 0 ? ended : Now()) + kFinalFlushS;
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

ChildOutcome Supervisor::Outcome(size_t i) const {
  const Child& c = children_[i];
  ChildOutcome o;
  o.run_id = config_.run_id;
  o.rank = c.launch->rank;
  o.local_rank = c.launch->local_rank;
  o.node_rank = node_rank_;
  o.host = config_.host;
  o.argv = c.launch->argv;
  o.wait_status = machine_.status(i);
  o.runtime_s = machine_.ended(i) - machine_.started(i);
  o.stderr_tail = c.err_tail;
  if (!error_dir_.empty()) {
    if (auto recorded = ReadErrorFile(ErrorFilePath(error_dir_, c.launch->rank))) {
      o.exception = recorded->message;
      o.traceback = recorded->traceback;
    }
  }
  return o;
}

// What the job's end says here (aml-shim's exit code is the machine's).
void Supervisor::Report() {
  // The control plane stopped the job with its words (the job's first
  // failure from another node, the hang's roll-call, or one line saying where
  // they are printed), or this node's own first failure is the job's: its
  // summary, then (with --max-restarts) the attempts.
  const std::optional<LinkOrder>& stop = machine_.stop();
  const std::optional<size_t> first = machine_.first_failure();
  const bool stop_says = stop && !stop->message.empty();
  if (stop_says || first) {
    std::optional<ChildOutcome> own;
    if (first) own = Outcome(*first);
    err_sink_.Write(stop_says ? stop->message : FormatFailureSummary(*own));
    // Where the other ranks waited: rank 0's verdict says it for the job; a
    // node alone, from its own ranks' records.
    std::string waited_json;
    if (stop) {
      err_sink_.Write(stop->waited_line);
      waited_json = stop->waited_json;
    } else if (!link_ && own) {
      std::vector<RankFlight> records;
      for (const RankRecord& r : machine_.records())
        records.push_back({r.rank, 0, 0, "", r.fr, r.fr_why});
      const Waited w = FindWaited(records, own->rank);
      err_sink_.Write(WaitedLine(own->rank, DescribeStatus(own->wait_status), w));
      waited_json = WaitedJson(own->rank, DescribeStatus(own->wait_status), w);
    }
    std::string json = stop ? stop->failure_json : "";
    if (json.empty() && own) json = FailureJson(*own);
    if (stop) {
      err_sink_.Write(stop->trailer);
      if (json.empty() && (!stop->attempts_json.empty() || !stop->retired_json.empty()))
        json = StopJson(config_.run_id, stop->exit_code, stop->message);
      json = WithAttempts(json, stop->attempts_json, stop->why_not);
      json = WithRetired(json, stop->retired_json);
      json = WithMember(json, "slow", stop->slow_json);
    }
    json = WithMember(json, "waited", waited_json);
    if (logs_ && !json.empty() && !(stop && stop->no_record)) {
      Status st = logs_->WriteFailure(json, !link_ || link_->WritesJobRecord());
      if (!st.ok()) LogWarning("--log-dir: " + st.error().message);
    }
  } else if (launcher_gone_) {
    LogInfo("stopped: " + config_.lifeline->What());
  } else if (machine_.shim_signal()) {
    // Stopped from outside (mpirun, Slurm, ^C): say so in one line; the
    // rank that failed first, if any, was on another node.
    std::string line = "stopped: aml-shim received " + SignalName(machine_.shim_signal()) +
                       " and forwarded it to its " + std::to_string(children_.size()) +
                       (children_.size() == 1 ? " child" : " children");
    if (const std::optional<size_t> stopped = machine_.first_stopped())
      line += "; rank " + std::to_string(children_[*stopped].launch->rank) +
              " ended first, with " + DescribeStatus(machine_.status(*stopped));
    LogInfo(line);
  }
  // The job's root saw it end well: a shim cut off from it on the way
  // (a part that ended, its record written) did not end the job.
  if (logs_ && link_ && link_->WritesJobRecord() && machine_.ExitCode() == 0)
    logs_->RemoveRunFailure();
  if (logs_ && !logs_->losses().empty()) {
    std::string all;
    for (const std::string& l : logs_->losses()) all += (all.empty() ? "" : ", ") + l;
    LogWarning("--log-dir " + logs_->path() + " is incomplete: " + all);
  }
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
  if (!machine_.spawn_failure_code()) Report();
  FlushAtExit();
  return machine_.ExitCode();
}

}  // namespace

int Supervise(const SupervisorConfig& config) {
  Supervisor s(config);
  return s.Run();
}

}  // namespace aml
