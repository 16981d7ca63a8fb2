#include "launch/node_machine.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <limits>

#include "launch/wait_status.h"
#include "shim/base/exit_code.h"
#include "shim/base/log.h"
#include "shim/base/units.h"

namespace aml {
namespace {

bool IsTerminating(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

}  // namespace

const char* NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kStarting: return "starting";
    case NodeState::kRunning: return "running";
    case NodeState::kCollecting: return "collecting";
    case NodeState::kTerminating: return "terminating";
    case NodeState::kKilling: return "killing";
    case NodeState::kDraining: return "draining";
    case NodeState::kEnded: return "ended";
    case NodeState::kRestarting: return "restarting";
    case NodeState::kDone: return "done";
  }
  return "?";
}

NodeMachine::NodeMachine(const NodeConfig& c, NodeProcs* procs, JobChannel* job)
    : c_(c), procs_(procs), job_(job), ranks_(c.children), standby_(c.standby) {
  warm_.Late(c.warm_late);
}

bool NodeMachine::AnyRunning() const {
  for (const Rank& r : ranks_)
    if (r.running) return true;
  return false;
}

// ---- Starting

void NodeMachine::Start(double now) {
  if (!StartAll(nullptr, now)) {
    // The ranks started are of no use without the others: no grace.
    BeginTeardown(now);
    kill_at_ = now;
  }
}

bool NodeMachine::StartAll(const RestartOrder* restart, double now) {
  Enter(NodeState::kStarting);
  warm_started_.clear();
  cold_started_.clear();
  for (size_t i = 0; i < ranks_.size() && !standby_; ++i) {
    int code = 0;
    if (!StartRank(i, restart, now, &code)) {
      spawn_failure_code_ = code;
      return false;
    }
    ranks_[i].running = true;
    ranks_[i].start = now;
  }
  if (c_.warm) StandbysAfterStart(restart != nullptr, now);
  Enter(NodeState::kRunning);
  last_output_ = last_look_ = attempt_start_ = starting_at_ = now;
  last_progress_ = -1;
  // The starting ranks' CPU time so far: a cold rank's is nil, a standby's
  // what its imports took (not this attempt's activity).
  starting_cpu_.assign(ranks_.size(), -1);
  if (c_.look_every_s > 0)
    for (const NodeProcs::RankCpu& r : procs_->StartingCpu())
      if (r.child < starting_cpu_.size()) starting_cpu_[r.child] = r.cpu_s;
  looking_ = false;
  AnswerPace(nullptr);
  return true;
}

// ---- Ranks ending

void NodeMachine::KillAll(int sig) {
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i].running) procs_->Signal(i, sig);
  if (IsTerminating(sig)) procs_->TermSent(true);
}

void NodeMachine::BeginTeardown(double now) {
  if (teardown_) return;
  teardown_ = true;
  kill_at_ = now + c_.grace_s;
  if (AnyRunning()) Enter(NodeState::kTerminating);
  KillAll(SIGTERM);
}

// A failure ends the attempt: with the recorder, the running ranks' flight
// records first (what came is sent once per attempt, empty when none was
// asked: rank 0 waits for every shim's), then the teardown.
void NodeMachine::BeginFailureTeardown(double now) {
  if (!c_.records_on_failure || recording_ || records_sent_) return BeginTeardown(now);
  if (teardown_ || stacks_ != StackPhase::kNone || shim_signal_ || !AnyRunning()) {
    SendRecords({});
    return BeginTeardown(now);
  }
  LogVerbose("a failure ends the attempt: the ranks still running are asked for their flight "
             "records first");
  recording_ = true;
  teardown_ = true;
  kill_at_ = std::numeric_limits<double>::infinity();  // set once the records are in
  Enter(NodeState::kTerminating);
  looking_ = false;  // (a look under way is overtaken)
  AnswerPace(nullptr);
  procs_->StartDumps(now, NodeProcs::DumpAsk::kRecords);
  if (procs_->DumpsDone(now)) FinishRecords(now);
}

void NodeMachine::FinishRecords(double now) {
  if (!recording_) return;
  recording_ = false;
  // A last look: a rank that ended meanwhile may have left its record
  // (aml-shim's agent writes it as an exception ends a Gloo rank); with
  // every rank gone, what is still waited for is settled with what came.
  if (AnyRunning()) procs_->DumpsDone(now);
  else procs_->DumpsEnded(now);
  SendRecords(procs_->Dumps().records);
  kill_at_ = now + c_.grace_s;
  KillAll(SIGTERM);
}

void NodeMachine::SendRecords(std::vector<RankRecord> records) {
  records_sent_ = true;
  records_ = std::move(records);
  if (job_) job_->OnRecords(records_);
}

void NodeMachine::OnExit(size_t child, int status, double now) {
  Rank& r = ranks_[child];
  r.running = false;
  r.status = status;
  r.end = now;
  const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!failed || stacks_ != StackPhase::kNone) return;
  if (!teardown_ && !first_failure_) {
    first_failure_ = child;
    // (The failure before the records: rank 0 takes them in its verdict.)
    if (job_) job_->OnChildFailed(procs_->Failure(child));
    BeginFailureTeardown(now);
  } else if (shim_signal_ && !first_failure_ && !first_stopped_) {
    first_stopped_ = child;
  }
}

// ---- The launcher

void NodeMachine::OnSignal(int sig, pid_t sender, double now) {
  if (IsTerminating(sig)) {
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
      if (!hurry_ && state_ != NodeState::kKilling) {
        LogInfo("second " + SignalName(sig) + ": killing every child now");
        kill_at_ = now;
      }
      hurry_ = true;
      return;
    }
    LogVerbose("received " + SignalName(sig) + ", forwarding to every child");
    StopRequested(sig, sender, now, "");
  } else {
    LogVerbose("received " + SignalName(sig) + ", forwarding to every child");
  }
  KillAll(sig);
}

// The launcher stops the job (its signal, or it is gone): every rank is
// ended (SIGTERM, SIGKILL after --grace) and no attempt starts after it.
void NodeMachine::StopRequested(int sig, pid_t sender, double now, const std::string& why) {
  restart_.reset();
  shim_signal_ = sig;
  shim_signal_sender_ = sender;
  shim_signal_at_ = now;
  if (job_) job_->OnShimSignalled(sig, why);
  if (state_ == NodeState::kRestarting) Enter(NodeState::kEnded);
  if (recording_) {  // the records that came go; the signal ends the ranks (its caller)
    recording_ = false;
    SendRecords(procs_->Dumps().records);
    kill_at_ = now + c_.grace_s;
  }
  if (!teardown_) {
    teardown_ = true;
    kill_at_ = now + c_.grace_s;
    if (AnyRunning()) Enter(NodeState::kTerminating);
  }
}

void NodeMachine::OnLauncherGone(const std::string& what, double now) {
  launcher_gone_ = true;
  LogVerbose(what + ": ending every child");
  if (shim_signal_) return;  // it had signalled: its grace goes on
  StopRequested(SIGTERM, 0, now, what);
  KillAll(SIGTERM);
}

void NodeMachine::OnReaderGone(double now) {
  if (reader_gone_) return;
  reader_gone_ = true;
  BeginTeardown(now);
}

void NodeMachine::OnFatal(double now) {
  teardown_ = true;
  kill_at_ = now;
  if (AnyRunning()) Enter(NodeState::kTerminating);
}

// ---- The job's orders

void NodeMachine::TakeOrders(double now) {
  if (!job_) return;
  while (std::optional<LinkOrder> order = job_->TakeOrder()) {
    // Any other order cuts a failure's records short (it comes after the
    // verdict, which waited for them at most --dump-timeout).
    const auto* end = std::get_if<EndAttemptOrder>(&*order);
    if (!(end && end->records) && !std::holds_alternative<PaceLookOrder>(*order))
      FinishRecords(now);
    std::visit([&](auto& o) { Take(std::move(o), now); }, *order);
  }
}

void NodeMachine::Take(CollectStacksOrder, double now) {
  if (stacks_ == StackPhase::kNone) CollectStacks(now);
}

void NodeMachine::Take(EndAttemptOrder order, double now) {
  // Taken with the restart before it (a shim descheduled while the job
  // restarted and failed again reads both at once): it ends the attempt
  // that restart starts, which then starts no rank.
  if (restart_) end_next_ = order;
  else if (order.records) BeginFailureTeardown(now);
  else BeginTeardown(now);
}

void NodeMachine::Take(RestartOrder order, double now) {
  if (stop_ || shim_signal_) return;
  restart_ = std::move(order);
  restart_wait_until_ = now + kAfterKillS;
}

void NodeMachine::Take(PaceLookOrder order, double now) { PaceLook(order.look, now); }

void NodeMachine::Take(StopOrder order, double now) {
  restart_.reset();
  end_next_.reset();
  if (state_ == NodeState::kRestarting) Enter(NodeState::kEnded);
  if (!stop_) stop_ = std::move(order);
  BeginTeardown(now);
}

// ---- Stacks (a hang's roll-call)

// First each rank's flight record and its stack from outside, while every
// rank still stands where it hung; then SIGABRT for faulthandler's dump
// (PYTHONFAULTHANDLER=1), which ends it.
void NodeMachine::CollectStacks(double now) {
  looking_ = false;  // (its dumps are asked for again)
  AnswerPace(nullptr);
  stacks_ = StackPhase::kDumping;
  if (state_ == NodeState::kRunning) Enter(NodeState::kCollecting);
  procs_->StartDumps(now, NodeProcs::DumpAsk::kVerdict);
  if (procs_->DumpsDone(now)) ProbeStacks(now);
}

void NodeMachine::ProbeStacks(double now) {
  stacks_ = StackPhase::kProbing;
  procs_->StartProbe();
  if (procs_->ProbeDone(now)) AbortForStacks(now);
}

void NodeMachine::AbortForStacks(double now) {
  procs_->FinishProbe();
  stacks_ = StackPhase::kAborting;
  collect_until_ = now + kCollectS;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i].running) procs_->Abort(i);  // the rank itself, not its helpers
    else ranks_[i].ended_before_collect = true;
  }
}

void NodeMachine::SendStacks(double now) {
  if (procs_->ProbeRunning() || (AnyRunning() && now < collect_until_)) return;
  stacks_ = StackPhase::kSent;
  std::vector<RankStack> stacks = procs_->Stacks();
  if (job_) job_->OnStacks(stacks);
}

// ---- Time

double NodeMachine::NextDeadline(double now) const {
  double next = now + 3600;
  switch (state_) {
    case NodeState::kTerminating:
      next = std::min(next, kill_at_);
      break;
    case NodeState::kKilling:
      next = std::min(next, give_up_at_);
      break;
    case NodeState::kDraining:
      next = std::min(next, drain_until_);
      break;
    case NodeState::kRestarting:
      next = std::min(next, now + 0.01);  // the groups still emptying
      break;
    default:
      break;
  }
  // A rank that ended with nothing yet done about it: at once.
  if (!AnyRunning() && (state_ == NodeState::kRunning || state_ == NodeState::kCollecting ||
                        state_ == NodeState::kTerminating || state_ == NodeState::kKilling))
    next = now;
  if (stacks_ == StackPhase::kDumping)
    next = std::min(next, procs_->DumpsNext(now));
  else if (stacks_ == StackPhase::kProbing && procs_->ProbeRunning())
    next = std::min(next, procs_->ProbeDeadline());
  else if (stacks_ == StackPhase::kAborting)
    next = std::min(next, collect_until_);
  if ((restart_ || !told_done_) && state_ == NodeState::kEnded) next = now;
  if (c_.warm && state_ != NodeState::kDone) next = std::min(next, warm_.NextDeadline());
  // Ended with a roll-call pending in a teardown: it waits until --grace
  // (and not after: then it waits only for what Finished asks of the job).
  if (state_ == NodeState::kEnded && teardown_ && WaitsForStacks(now))
    next = std::min(next, kill_at_);
  if (looking_ || recording_) next = std::min(next, procs_->DumpsNext(now));
  else next = std::min(next, NextLook());
  next = std::min(next, NextCpuLook());
  return std::max(next, now);
}

void NodeMachine::Enter(NodeState s) {
  state_ = s;
  if (s == NodeState::kDone) EndStandbys();  // no process of the shim outlives it
}

bool NodeMachine::Step(double now) {
  MakeStandbys(now);
  Look(now);     // first: a CPU reading's activity must not put off a look due,
  CpuLook(now);  // which learns whether the ranks still start
  if (recording_ && (procs_->DumpsDone(now) || !AnyRunning())) FinishRecords(now);
  if (stacks_ == StackPhase::kDumping && !AnyRunning()) {
    // Every rank ended in the hang's dumps (killed in the one with stack
    // traces, say): what is waited for is settled with what came, at once
    // (before: --dump-timeout waited out, each rank's line saying its dump
    // did not come in time; test_culprit).
    procs_->DumpsEnded(now);
    ProbeStacks(now);
  }
  if (stacks_ == StackPhase::kDumping && procs_->DumpsDone(now)) ProbeStacks(now);
  if (stacks_ == StackPhase::kProbing && procs_->ProbeDone(now)) AbortForStacks(now);
  if (stacks_ == StackPhase::kAborting) SendStacks(now);
  if (state_ == NodeState::kDone) return false;
  if (teardown_ && state_ == NodeState::kTerminating && now >= kill_at_ && AnyRunning()) {
    KillAll(SIGKILL);
    Enter(NodeState::kKilling);
    give_up_at_ = now + kAfterKillS;
  }
  if (AnyRunning()) {
    if (state_ == NodeState::kKilling && now >= give_up_at_) {
      LogError("children still alive " + FormatNumber(kAfterKillS, "%.0f") +
               " s after SIGKILL (uninterruptible sleep?); giving up on them");
      Enter(NodeState::kDone);
      return false;
    }
    return true;
  }
  switch (state_) {
    case NodeState::kStarting:
    case NodeState::kRunning:
    case NodeState::kCollecting:
    case NodeState::kTerminating:
    case NodeState::kKilling:
      // Every rank is gone; end what they left behind (their groups were
      // signalled as each ended; orphans that left the group are ours).
      // None now is none for good: every rank is reaped, so every process
      // left of the attempt was reparented here, and would have been found.
      Enter(NodeState::kDraining);
      ended_at_ = now;
      stragglers_left_ = procs_->SignalStragglers(SIGTERM);
      drain_until_ = now + std::min(c_.grace_s, kDrainS);
      // In a teardown, what they left gets no more than a second past the
      // ranks' own --grace: the shim is gone within --grace + 1 s.
      if (teardown_) drain_until_ = std::min(drain_until_, std::max(now, kill_at_) + kDrainAfterKillS);
      [[fallthrough]];
    case NodeState::kDraining:
      if (!procs_->OutputOpen() && !(stragglers_left_ && procs_->StragglersLeft())) {
        Enter(NodeState::kEnded);
      } else if (now >= drain_until_) {
        procs_->SignalStragglers(SIGKILL);
        procs_->KillGroups();
        Enter(NodeState::kEnded);
      } else {
        return true;
      }
      [[fallthrough]];
    case NodeState::kEnded:
      if (Finished(now)) {
        Enter(NodeState::kDone);
        return false;
      }
      if (!restart_) return true;
      Enter(NodeState::kRestarting);
      [[fallthrough]];
    case NodeState::kRestarting:
      if (Restart(now)) return true;
      Enter(NodeState::kDone);
      return false;
    case NodeState::kDone:
      break;
  }
  return false;
}

// The attempt is over here: done, unless the job still owes something
// (this shim relays for other nodes until they end, or a restart comes).
bool NodeMachine::Finished(double now) {
  if (!job_) return true;
  if (!told_done_) {
    told_done_ = true;
    NodeOutcome o;
    o.code = spawn_failure_code_;
    if (!o.code && first_failure_) o.code = ExitCodeFor(ranks_[*first_failure_].status);
    o.first_output_wall = procs_->FirstOutputWall();
    job_->OnChildrenDone(o);
  }
  TakeOrders(now);
  // A roll-call under way here is finished first, also after the
  // launcher's signal or a stop, within their --grace (the shim is gone
  // within --grace + 1 s all the same): a signalled single shim whose ranks
  // ended before its stack reader did exited 143 without the roll-call its
  // verdict had begun (a busy CI machine: the reader was descheduled after
  // its last line).
  if (WaitsForStacks(now)) return false;
  return !restart_ && job_->MayExit();
}

bool NodeMachine::WaitsForStacks(double now) const {
  const bool pending = stacks_ == StackPhase::kDumping || stacks_ == StackPhase::kProbing ||
                       stacks_ == StackPhase::kAborting;
  return pending && !(teardown_ && now >= kill_at_);
}

// Every rank and straggler of the attempt is gone; once each rank's process
// group is empty too, the next attempt starts. False when it cannot.
bool NodeMachine::Restart(double now) {
  if (!procs_->GroupsEmpty()) {
    if (now < restart_wait_until_) return true;
    LogError("cannot restart: the process group of an ended rank still has members " +
             FormatNumber(kAfterKillS, "%.0f") + " s after SIGKILL (uninterruptible sleep?)");
    spawn_failure_code_ = kExitShimFailure;
    return false;
  }
  RestartOrder order = std::move(*restart_);
  restart_.reset();
  procs_->BeginRestart(order, order.print_own_failure && first_failure_.has_value());
  restarts_ = order.restart;
  if (order.roster) {
    // --spares: retired (it ran ranks, now none): its standbys end, no rank
    // of it starts again.
    if (order.node_rank < 0 && !standby_) {
      EndStandbys();
      retired_ = true;
    }
    standby_ = order.node_rank < 0;
  }
  // The attempt's state, afresh.
  for (Rank& r : ranks_) r = Rank{};
  first_failure_.reset();
  first_stopped_.reset();
  teardown_ = false;
  kill_at_ = give_up_at_ = drain_until_ = ended_at_ = collect_until_ = 0;
  stragglers_left_ = told_done_ = false;
  recording_ = records_sent_ = false;
  records_.clear();
  if (stacks_ == StackPhase::kProbing) procs_->FinishProbe();
  stacks_ = StackPhase::kNone;
  procs_->TermSent(false);
  if (end_next_) {
    // Ordered ended already: over before it began (with no records to
    // give, when a failure's were asked for).
    if (end_next_->records) SendRecords({});
    end_next_.reset();
    teardown_ = true;
    ended_at_ = now;
    Enter(NodeState::kEnded);
    return true;
  }
  if (!StartAll(&order, now)) {
    BeginTeardown(now);
    kill_at_ = now;
  }
  return true;
}

// ---- The end

int NodeMachine::ExitCode() const {
  if (spawn_failure_code_) return spawn_failure_code_;
  // The control plane's stop, with its words (the job's first failure from
  // another node, the hang's roll-call, one line saying where they are
  // printed), or this node's own first failure.
  if (stop_ && !stop_->message.empty()) return stop_->exit_code;
  if (first_failure_) return ExitCodeFor(ranks_[*first_failure_].status);
  if (launcher_gone_) return 128 + SIGTERM;
  // Stopped from outside: the status of the rank that ended first after the
  // signal (128+N when it died of it), 0 when each ended well; 128+N when
  // none ran then (between two attempts: the job was stopped, not done).
  if (shim_signal_) {
    if (first_stopped_) return ExitCodeFor(ranks_[*first_stopped_].status);
    if (standby_) return 128 + shim_signal_;  // no ranks ran here: stopped, not done
    for (const Rank& r : ranks_)
      if (!(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)) return 128 + shim_signal_;
    return 0;
  }
  if (reader_gone_) return 128 + SIGPIPE;
  return 0;
}

}  // namespace aml
