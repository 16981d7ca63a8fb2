#include "shim/control/job_machine.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "launch/failure_report.h"
#include "launch/flight/waited.h"
#include "launch/wait_status.h"
#include "shim/base/log.h"
#include "shim/base/text_list.h"
#include "shim/base/units.h"

namespace aml {

Msg LostStop(const std::string& what) {
  return Msg("stop").Set("kind", std::string("lost")).Set("code", 125).Set("what", what);
}

bool LeavesInOrder(const Msg& m) { return m.type() == "done" || m.type() == "bye"; }

JobMachine::JobMachine(const JobConfig& c, JobPorts* ports)
    : c_(c),
      ports_(ports),
      root_(c.rank == 0),
      attempts_(c.max_restarts),
      straggler_(c.ranks_per_node) {
  shim_hosts_[c_.rank] = c_.host;
  node_ = c_.node;
  if (Spares()) {
    if (c_.rank >= c_.size - c_.spares) node_ = -1;  // a spare: it waits
    if (c_.rank == 0) roster_.emplace(c_.size, c_.spares);
  }
}

void JobMachine::Start(double now) {
  attempts_.Began(ports_->WallNow());
  NoteAttemptNodes();
  Enter(JobState::kRunning, now);
  // --spares: a heir that can take the root's place (job_heir.cc).
  if (root_) NameHeir();
}

void JobMachine::Enter(JobState s, double now) {
  // A shim already stopped keeps its stop's time: a signal after the
  // verdict does not give the shims below another --grace (seed 3189).
  if ((s == JobState::kStopped || s == JobState::kSignalled) && !Over()) stop_at_ = now;
  if (s != state_ && !JobMoveAllowed(state_, s))
    stray_moves_.push_back(std::string(JobStateName(state_)) + " -> " + JobStateName(s));
  state_ = s;
  entered_ = now;
}

bool JobMachine::Busy() const {
  return state_ == JobState::kCollecting || state_ == JobState::kEnding ||
         state_ == JobState::kBackingOff || state_ == JobState::kElecting;
}

// ---- What this node sees

void JobMachine::OnChildFailed(const LocalFailure& f, double now) {
  if (failed_at_ == 0) failed_at_ = now;
  if (Over() || Busy()) return;
  FailNote n;
  n.wall_time = f.wall_time;
  n.rank = f.rank;
  n.node = node_;
  n.shim = c_.rank;
  n.code = f.exit_code;
  n.host = c_.host;
  n.status = f.status;
  n.summary = f.summary;
  n.json = f.failure_json;
  n.local = true;
  if (root_) {
    NoteFailure(std::move(n), now);
    return;
  }
  if (state_ == JobState::kRunning) Enter(JobState::kFailed, now);
  Msg m("fail");
  m.SetNumber("time", n.wall_time).Set("rank", n.rank).Set("node", n.node).Set("code", n.code);
  m.Set("a", attempts_.restarts());  // its attempt: said again after a relink, it may come late
  m.Set("shim", c_.rank);
  m.Set("host", n.host).Set("status", n.status);
  // The summary travels whole but bounded (its stderr tail is 16 KiB at most).
  m.Set("summary", n.summary.substr(0, 64 << 10)).Set("json", n.json.substr(0, 64 << 10));
  SayUp(m.Encode());
  own_failure_ = Msg("stop");
  own_failure_->Set("kind", std::string("fail")).Set("code", n.code).Set("rank", n.rank);
  own_failure_->Set("node", n.node).Set("host", n.host).Set("status", n.status);
  own_failure_->Set("by", c_.host);
}

void JobMachine::OnChildrenDone(const NodeOutcome& o, double now) {
  outcome_ = o;
  children_done_ = true;
  // Ranks ended by the halt of a failure elsewhere end with 0 too: only
  // an attempt still running ended well here.
  if (root_ && o.code == 0 && state_ == JobState::kRunning && failed_at_ == 0 &&
      !Spares())
    own_done_well_ = true;
  MaybeSendWell(now);
  MaybeSendEnded(now);
  MaybeSendDone(now);
}

void JobMachine::OnShimSignalled(int sig, const std::string& why, double now) {
  if (state_ == JobState::kSignalled) return;
  const bool was_stopped = state_ == JobState::kStopped;
  signalled_in_ = state_;
  Enter(JobState::kSignalled, now);
  if (was_stopped) return;
  // The others stop with it, as they would if the launcher had signalled
  // them too (it usually has), with the same status.
  Msg bye("bye");
  bye.Set("what", ShimName(c_.rank, c_.host) +
                      (why.empty() ? " was stopped by its launcher (" + SignalName(sig) + ")"
                                   : " ended its ranks: " + why));
  bye.Set("code", 128 + sig);
  ports_->SendUp(bye.Encode());
  ports_->SendDown(bye.Encode());
  if (HeldByHeir())
    Order(HeirStop(signalled_in_, 128 + sig,
                   "its launcher sent " + ShimName(c_.rank, c_.host) + " " + SignalName(sig)));
}

// A shim whose launcher stopped it said so: pass it on, everywhere, once.
void JobMachine::OnBye(const std::string& frame, const Msg& m, double now) {
  if (Over()) return;
  ports_->SendUp(frame);
  ports_->SendDown(frame);
  const int code = static_cast<int>(m.Int("code", 143));
  const std::string what = EscapeControl(m.Str("what"));
  Stop(HeldByHeir() ? HeirStop(state_, code, what)
                    : StopOrder::Of(code, "aml-shim: stopped: " + what + "\n", ""),
       now);
}

void JobMachine::OnShimLost(int shim, const std::string& what, bool may_live, double now) {
  // A part of this subtree is gone: it did not end well, whatever the
  // ranks here did (aml-plane-sim, seed 1313: the parent of a frozen shim
  // said done and exited 0).
  lost_below_ = true;
  if (Over()) return;
  if (root_ && may_live) {
    heirs_.LostAlive(shim, now);
  }
  if (root_) DecideBeforeLoss(now);
  if (Over()) return;
  if (root_ && Spares()) RetireLost(shim, what, now);
  else if (root_) StopAsLost(what, now);
  else ports_->SendUp(Msg("lost").Set("what", what).Set("shim", shim).Encode());
}

void JobMachine::OnParentLost(const std::string& line, double now, bool record) {
  if (cut_off_) return;
  cut_off_ = true;
  if (Over() || state_ == JobState::kDone) return;
  StopOrder own = StopOrder::Of(125, line, record ? StopJson(c_.run_id, 125, line) : "");
  // Cut off from rank 0: this node cannot hear the job's verdicts, so it
  // ends its part (the launcher ends the rest, or they learn it the same way).
  ports_->SendDown(
      LostStop("the control plane lost " + ShimName(c_.rank, c_.host) + "'s parent").Encode());
  Stop(std::move(own), now);
}

void JobMachine::Stop(StopOrder own, double now) {
  Enter(JobState::kStopped, now);
  Order(std::move(own));
}

// ---- Time

// Rank 0 judges the job hung when no rank wrote for --hang-timeout, plus
// what the tree's beats may delay the news.
double JobMachine::HangAt() const {
  return ports_->SubtreeOutput() + *c_.hang_timeout_s + ports_->HangSlackS();
}

double JobMachine::StateDeadline() const {
  const bool root = root_;
  constexpr double kNever = std::numeric_limits<double>::infinity();
  switch (state_) {
    case JobState::kRunning:
      return root && c_.hang_timeout_s ? HangAt() : kNever;
    case JobState::kDeciding:
      return entered_ + (c_.size == 1 ? 0 : kFailWindowS) +
             (AwaitsRecords() ? c_.dump_timeout_s + kRecordsSlackS : 0);
    case JobState::kCollecting:
      return entered_ + (root ? kCollectS : kStopWaitS) +
             (c_.flight_recorder ? c_.dump_timeout_s : 0);
    case JobState::kEnding:
      return root ? entered_ + c_.grace_s + kEndingS : kNever;
    case JobState::kBackingOff:
      return attempts_.backoff_until();
    case JobState::kElecting:
      return ElectionDeadline();
    default:
      return kNever;
  }
}

double JobMachine::NextDeadline(double now) const {
  double next = std::min(now + 3600, StateDeadline());
  // Moments that only let MayExit say yes count while they are ahead.
  auto ahead = [&](double t) {
    if (t > now) next = std::min(next, t);
  };
  if (state_ == JobState::kDone) ahead(entered_ + kFlushS);
  if (state_ == JobState::kStopped || state_ == JobState::kSignalled) {
    ahead(stop_at_ + kFlushS);
    ahead(stop_at_ + c_.grace_s + kFlushS);
  }
  if (failed_at_ > 0 && !Over()) ahead(failed_at_ + VerdictWait());
  if (checking_) next = std::min(next, now + kCheckPollS);
  return std::max(next, now);
}

void JobMachine::OnTimer(double now) {
  if (now >= StateDeadline()) {
    const bool root = root_;
    switch (state_) {
      case JobState::kRunning:  // rank 0 with --hang-timeout: no rank wrote
        hang_silent_s_ = now - ports_->SubtreeOutput();
        StartCollect(now);
        break;
      case JobState::kDeciding:
        DecideFailure(now);
        break;
      case JobState::kCollecting:
        if (root) {
          FinishCollect(now);
        } else {
          Stop(StopOrder::Of(124,
                             "aml-shim: stopped: the job was judged hung, and rank 0's shim "
                             "said nothing more within " +
                                 FormatRate(kStopWaitS) + " s\n",
                             ""),
               now);
        }
        break;
      case JobState::kBackingOff:
        SendRestart(now);
        break;
      case JobState::kElecting:
        CheckTakeover(now);
        break;
      case JobState::kEnding:  // rank 0
        StopAsLost("cannot restart: " + JoinCapped(ShimsNotIn(attempts_.ended()), 8) +
                       " did not end its ranks within " + FormatRate(c_.grace_s + kEndingS) +
                       " s",
                   now);
        break;
      default:
        break;
    }
  }
  if (checking_) MaybeSendEnded(now);  // its node's check may have answered
  // A failing node that heard no verdict, no restart left: its failure is
  // the job's end as far as the shims below it can know; they end their
  // ranks before it leaves (aml-plane-sim, seed 12302: it left them running).
  if (!root_ && failed_at_ > 0 && !Over() && own_failure_ &&
      !attempts_.MayRestart() && now >= failed_at_ + VerdictWait() &&
      ports_->ChildrenLinked()) {
    ports_->SendDown(own_failure_->Encode());
    Stop(StopOrder::Of(static_cast<int>(own_failure_->Int("code", 1)), "", ""), now);
  }
  MaybeSendDone(now);
}

// This shim's part of the job ended well and every shim below it said so:
// it tells its parent, which then closes the link; the shim may go.
void JobMachine::MaybeSendDone(double now) {
  // Ranks ended by the hang's SIGABRT are not a part of the job that ended well.
  // With --spares no shim leaves before the job ended well (rank 0's
  // "finish"): a spare may yet be needed, a node's ranks started again; a
  // loss below was rank 0's to judge then.
  if (Spares() && !finished_) return;
  if (root_ || state_ != JobState::kRunning || !children_done_ || cut_off_ ||
      (lost_below_ && !finished_) || failed_at_ > 0 || outcome_.code != 0 ||
      !ports_->ChildrenAllDone())
    return;
  Enter(JobState::kDone, now);
  ports_->SendUp(Msg("done").Set("n", 1 + done_below_).Encode());
}

bool JobMachine::MayExit(double now) const {
  // The launcher stopped this shim: in every phase (a restart under way, a
  // failure waiting for its verdict, a roll-call) it goes once its last
  // words are sent (its bye, at most kFlushS) and the shims below, told by
  // them, ended their ranks (at most --grace).
  const bool stopped = state_ == JobState::kStopped || state_ == JobState::kSignalled;
  if (state_ != JobState::kSignalled && (!orders_.empty() || Busy())) return false;
  // A failure waits for the verdict while restarts remain.
  if (c_.size == 1)
    return stopped || !(failed_at_ > 0 && c_.max_restarts > 0);
  if (stopped || cut_off_) {
    // The shims below end first (their teardown takes up to --grace), so
    // that a launcher which ends the job when rank 0 exits cuts no one short.
    if (ports_->ChildrenLinked() && now < stop_at_ + c_.grace_s + kFlushS) return false;
    return ports_->Flushed() || now >= stop_at_ + kFlushS;
  }
  if (!children_done_) return false;
  // A failing node waits a moment for rank 0's verdict (the line it prints);
  // while restarts remain, for the verdict itself (or the loss of its parent).
  if (failed_at_ > 0) return !attempts_.MayRestart() && now >= failed_at_ + VerdictWait();
  if (root_)  // else the job is not over
    return (!Spares() || finished_) && ports_->ChildrenAllDone();
  // Gone once its parent heard "done" (the parent closes), or a moment after.
  return state_ == JobState::kDone && (ports_->ParentClosed() || now >= entered_ + kFlushS);
}

std::optional<LinkOrder> JobMachine::TakeOrder() {
  if (orders_.empty()) return std::nullopt;
  LinkOrder o = std::move(orders_.front());
  orders_.pop_front();
  return o;
}

// ---- Rank 0's decisions

void JobMachine::NoteFailure(FailNote f, double now) {
  if (Over() || Busy()) return;
  if (state_ != JobState::kDeciding) {
    // The first failure heard: every rank of the job ends now, whatever
    // the verdict (a stop, or a restart round, both end them); the window
    // only decides which failure the verdict names.
    Enter(JobState::kDeciding, now);
    // A rank's failure: with the recorder, every shim takes its running
    // ranks' flight records before it ends them, and the verdict waits
    // for them (--dump-timeout at most) to say where the others waited.
    records_.Ask(c_.flight_recorder && f.lost.empty());
    Msg halt("halt");
    if (records_.asked()) halt.Set("records", 1);
    ports_->SendDown(halt.Encode());
    EndAttemptOrder own;
    own.records = records_.asked();
    Order(std::move(own));
  }
  // The same failure said again (by a shim that linked to the heir after
  // a cut, which may have lost the first) is one failure.
  for (const FailNote& k : fails_)
    if (k.shim == f.shim && k.rank == f.rank && k.wall_time == f.wall_time) return;
  fails_.push_back(std::move(f));
}

// The window's failure that happened first (by its node's clock).
const JobMachine::FailNote& JobMachine::EarliestFailure() const {
  const FailNote* first = &fails_[0];
  for (const FailNote& f : fails_)
    if (f.wall_time < first->wall_time) first = &f;
  return *first;
}

AttemptRecord JobMachine::FailedAttempt(const FailNote& first) const {
  AttemptRecord a = attempts_.New(first.wall_time);
  a.exit_code = first.code;
  a.rank = first.rank;
  a.what = "rank " + std::to_string(first.rank) + " failed (" + EscapeControl(first.status) + ")";
  return a;
}

void JobMachine::DecideFailure(double now) {
  if (fails_.empty()) return Enter(JobState::kRunning, now);
  const FailNote* first = &EarliestFailure();
  if (!first->lost.empty()) {
    // A node lost first (--spares): the attempt ends with the loss.
    const std::string what = first->lost;
    AttemptRecord a = attempts_.New(first->wall_time);
    a.exit_code = 125;
    a.what = EscapeControl(what);
    fails_.clear();
    Roster* r = &*roster_;
    r->NoteFirstFailure(-1);
    EndAttempt(std::move(a), LostStop(what),
               StopOrder::Of(125, "aml-shim: " + EscapeControl(what) + ": ending the job\n", ""),
               "aml-shim: " + EscapeControl(what) + "\n", false, now);
    return;
  }
  if (Spares()) {
    NoteStreak(*first, now);
    if (Over()) return;  // no spare left for the node it retired
  }
  Msg stop("stop");
  stop.Set("kind", std::string("fail")).Set("code", first->code).Set("rank", first->rank);
  stop.Set("node", first->node).Set("host", first->host).Set("status", first->status);
  stop.Set("by", c_.host);
  StopOrder own = StopOrder::Of(first->code, "", "");
  if (!first->local) {
    own.message = first->summary;
    own.failure_json = first->json;
  }
  // Where the other ranks waited, from their records (launch/flight/waited.h).
  if (records_.asked()) {
    const Waited w = records_.WaitedFor(first->rank);
    own.waited_line = WaitedLine(first->rank, first->status, w);
    own.waited_json = WaitedJson(first->rank, first->status, w);
  }
  AttemptRecord a = FailedAttempt(*first);
  const std::string message = (first->local ? "" : first->summary) + own.waited_line;
  const bool print_own = first->local;
  fails_.clear();
  EndAttempt(std::move(a), stop, std::move(own), message, print_own, now);
}

// A shim lost (or one that never answered): every shim exits 125, never
// restarted (aml-shim's own failure); with --max-restarts the attempts,
// this one last, stay in the job's record.
void JobMachine::StopAsLost(const std::string& what, double now) {
  if (Over()) return;
  StopOrder own = StopOrder::Of(125, "aml-shim: " + EscapeControl(what) + ": ending the job\n", "");
  if (c_.max_restarts > 0) {
    // The attempt being ended (a restart round under way) keeps its own
    // failure, and so does one whose failure came before the loss (in
    // the window); the one running ends with the loss.
    const bool ending = state_ == JobState::kEnding || state_ == JobState::kBackingOff;
    AttemptRecord a = ending ? attempts_.current() : attempts_.New(ports_->WallNow());
    if (state_ == JobState::kDeciding && !fails_.empty()) {
      a = FailedAttempt(EarliestFailure());
    } else if (!ending) {
      a.exit_code = 125;
      a.what = EscapeControl(what);
    }
    attempts_.Keep(a);
    RecordAttempts(&own, "not restarted: the control plane lost a shim (" + EscapeControl(what) +
                             ")");
  } else {
    RecordAttempts(&own, "");  // the retired nodes, with --spares
  }
  StopJob(LostStop(what),
          std::move(own), now);
}

void JobMachine::StopJob(const Msg& stop, StopOrder own, double now) {
  if (Over()) return;
  ports_->SendDown(stop.Encode());
  Stop(std::move(own), now);
}

// Rank 0: every shim not in `heard`, by rank and host.
std::vector<std::string> JobMachine::ShimsNotIn(const std::set<int>& heard) const {
  std::vector<std::string> out;
  for (int s = 0; s < c_.size; ++s)
    if (!heard.count(s)) {
      auto it = shim_hosts_.find(s);
      out.push_back(ShimName(s, it == shim_hosts_.end() ? "" : it->second));
    }
  return out;
}

std::string JobMachine::StopLine(const Msg& m) const {
  const std::string kind = m.Str("kind");
  const std::string by = EscapeControl(m.Str("by"));
  if (kind == "fail") {
    const int rank = static_cast<int>(m.Int("rank"));
    const std::string status = EscapeControl(m.Str("status"));
    const bool mine = Spares() ? node_ >= 0 && rank / std::max(1, c_.ranks_per_node) == node_
                               : std::find(c_.ranks.begin(), c_.ranks.end(), rank) != c_.ranks.end();
    if (mine)
      return "aml-shim: rank " + std::to_string(rank) + " failed (" + status +
             "): the job's first failure; rank 0's shim (on " + by + ") printed its summary\n";
    return "aml-shim: stopped: rank " + std::to_string(rank) + " on node " +
           std::to_string(m.Int("node")) + " (host " + EscapeControl(m.Str("host")) +
           ") failed first (" + status + ")\n";
  }
  if (kind == "hang")
    return "aml-shim: stopped: the job was hung (no output for " +
           FormatNumber(m.Number("silent"), "%.0f") + " s); rank 0's shim (on " + by +
           ") printed the roll-call\n";
  return "aml-shim: stopped: " + EscapeControl(m.Str("what")) + "\n";
}

}  // namespace aml
