#include "launch/supervisor.h"

#include "launch/supervisor_table.h"

namespace aml {
namespace supervise {

OutputSink* g_err_sink = nullptr;

timespec Timeout(double seconds) {
  seconds = std::max(0.0, seconds);
  auto whole = static_cast<time_t>(seconds);
  return {whole, static_cast<long>((seconds - static_cast<double>(whole)) * 1e9)};
}

namespace {

void QueueLogLine(const std::string& line) { g_err_sink->Write(line); }

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

}  // namespace

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
  // The agent (the ranks' sitecustomize): the flight recorder's, and
  // --warm-restart's learning of each rank's modules.
  Status agent = error_dir_.empty() ? Status(Error{"cannot make " + error_dir})
                 : config_.flight_recorder || config_.warm_restart ? MakeFlightAgent(error_dir_)
                                                                   : Ok();
  if (config_.flight_recorder) {
    // With the first attempt's pipes and dumps (docs/control-plane.md,
    // "Naming the culprit").
    Status st = agent;
    if (st.ok()) st = MakeFlightAttemptDir(error_dir_, 0);
    if (st.ok()) flight_ = true;
    else LogWarning("--flight-recorder: " + st.error().message + "; a hang's culprit is not named");
  }
  if (config_.warm_restart) {
    Status st = PrepareWarm(agent);
    if (!st.ok()) {
      LogError(st.error().message);
      return kExitShimFailure;
    }
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

bool Supervisor::Start(size_t i, const RestartOrder* restart, WarmStart* w, int* code) {
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
    // Its store is open already (launch/store_host.h): every rank a client
    // of it, as under torchrun's agent store.
    if (restart->agent_store && !node) sets.emplace_back("TORCHELASTIC_USE_AGENT_STORE", "True");
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
  std::optional<SpawnedChild> warm;
  if (w && w->from_standby) warm = TakeStandby(i, sets, w);
  if (warm) {
    spawned = *warm;
  } else {
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
  // Untagged too, lines go out whole (line_tagger.h).
  if (!config_.tag_output) prefix.clear();
  c.out.tagger = std::make_unique<LineTagger>(prefix, kMaxLine);
  c.err.tagger = std::make_unique<LineTagger>(prefix, kMaxLine);
  if (config_.foreground_tty && i == 0 && isatty(STDIN_FILENO))
    tcsetpgrp(STDIN_FILENO, c.pid);
  if (w && !w->from_standby)
    LogWarning("--warm-restart: rank " + std::to_string(c.launch->rank) + " starts cold: " + w->cold);
  // What its next standby is made from.
  if (warm_.on() && !node)
    warm_.Set(i, c.launch->rank, c.launch->argv, c.launch->base_env, sets, c.launch->cpus);
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

// The keeper and the standbys (--warm-restart) are the shim's, not the attempt's.
std::vector<pid_t> Supervisor::NotStragglers() const {
  std::vector<pid_t> pids = warm_.pids();
  for (pid_t p : store_host_.pids()) pids.push_back(p);
  pids.push_back(keeper_.pid());
  return pids;
}

bool Supervisor::SignalStragglers(int sig) { return SignalDescendants(sig, NotStragglers()); }

bool Supervisor::StragglersLeft() { return HasDescendants(NotStragglers()); }

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
    std::string gone;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pid == keeper_.pid()) {
      keeper_.Lost();
      LogWarning("the keeper (pid " + std::to_string(pid) + ") ended: " + DescribeStatus(status));
    } else if (i) {
      lingering_.push_back(pid);
      OnExit(*i, status, Now());
    } else if (std::optional<size_t> slot; warm_.Reaped(pid, status, &slot, &gone)) {
      // A standby ended before its restart: that rank's next start is cold.
      if (slot) machine_.OnStandbyGone(*slot, gone);
    } else if (store_host_.Reaped(pid, status, &gone)) {
      // (Said at the next restart: rank 0 hosts its store.)
      if (!gone.empty()) LogVerbose("--warm-restart: " + gone);
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

std::vector<pid_t> TakeEmptyGroups(std::vector<pid_t>* groups) {
  std::vector<pid_t> empty;
  for (size_t i = 0; i < groups->size();) {
    if (kill(-(*groups)[i], 0) != 0 && errno == ESRCH) {
      empty.push_back((*groups)[i]);
      (*groups)[i] = groups->back();
      groups->pop_back();
    } else {
      ++i;
    }
  }
  return empty;
}

// The keeper must never signal a group id that may have been recycled.
void Supervisor::ForgetEmptyGroups() { keeper_.Forget(TakeEmptyGroups(&lingering_)); }

void Supervisor::ReadSignals() {
  signalfd_siginfo info;
  while (read(sfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
    Signal(static_cast<int>(info.ssi_signo), static_cast<pid_t>(info.ssi_pid));
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

// Every rank, straggler and process group of the attempt is gone: the
// restart's words, then each log and error file ready for the next attempt.
void Supervisor::BeginRestart(const RestartOrder& order, bool print_own_failure) {
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

double Supervisor::NextDeadline(double now) const {
  double next = machine_.NextDeadline(now);
  if (link_) next = std::min(next, link_->NextDeadline(now));
  if (config_.metrics) next = std::min(next, config_.metrics->NextDeadline());
  if (config_.lifeline && config_.lifeline->watching() && config_.lifeline->fd() < 0 &&
      !launcher_gone_)
    next = std::min(next, now + Lifeline::kCheckS);
  for (const Child& c : children_)
    for (const Stream* s : {&c.out, &c.err})
      if (s->fd >= 0 && s->tagger->has_partial())
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
  if (output_seen_) NoteOutput(now);
  if (link_) {
    link_->OnPoll(fds.data() + first_link, lifeline_at - first_link, now);
  }
  if (lifeline && (lifeline->fd() < 0 || (fds[lifeline_at].revents & POLLIN)) &&
      lifeline->CheckGone())
    LauncherGone();
  if (fds[0].revents & POLLIN) ReadSignals();
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

void Supervisor::NoteOutput(double now) {
  machine_.NoteOutput(now);
  if (link_) link_->OnOutput(now);
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
  if (int code = Prepare()) {
    // Refused before any rank ran (--warm-restart's check): nothing for the
    // keeper to end. It is told so and reaped, and the private directory
    // removed here: without it, it took the closed pipe for this shim's
    // death and outlived it by its grace (found by test_warm_restart.py).
    if (!error_dir_.empty()) RemoveErrorDir(error_dir_);
    keeper_.Dismiss();
    return code;
  }
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

int Supervisor::Finish() {
  EndStandbys();
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

}  // namespace supervise

int Supervise(const SupervisorConfig& config) {
  supervise::Supervisor s(config);
  return s.Run();
}

}  // namespace aml
