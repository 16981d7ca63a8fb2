#include "shim/sim/sim_node.h"

#include <signal.h>
#include <sys/wait.h>

#include "launch/wait_status.h"
#include "shim/base/units.h"
#include "shim/sim/fault_plan.h"

namespace aml {
namespace {

int Exited(int code) { return code << 8; }   // as wait(2) encodes an exit
int Killed(int sig) { return sig; }           // and a death by a signal

}  // namespace

void SimProcs::End(size_t child, bool straggler, double at, int status) {
  Proc& p = straggler ? procs_[child].left : procs_[child].rank;
  if (!p.alive) return;
  schedule_(at, child, straggler ? kLeftProc : kRankProc, p.epoch, status);
}

bool SimProcs::Start(size_t child, const RestartOrder* restart, WarmStart* warm, int* code) {
  (void)code;
  if (restart && plan_.warm) CheckWarm(child, warm);
  if (stopped) violation = "rank " + std::to_string(shim_) + " was started after its shim's stop";
  for (const Pair& p : procs_)
    if (p.rank.alive || p.left.alive)
      violation = "shim " + std::to_string(shim_) + " started an attempt while a process of the "
                  "last one was still alive";
  if (child == 0) {
    attempt_ = restart ? restart->restart : 0;
    started_at.push_back(now_);
    started_attempts.push_back(attempt_);
    ran_ = true;
  }
  Pair& pr = procs_[child];
  pr.rank = Proc{true, next_epoch_++, now_};
  pr.left = Proc{plan_.straggler, next_epoch_++, now_};
  // Its next standby is due from now (made at once: it learns the rank's
  // modules by itself).
  pr.due_from = now_;
  pr.spare = pr.lost = false;
  // Its natural end: a failure, or the attempt's healthy end (never, for a
  // rank that hangs).
  double end = plan_.prints ? now_ + plan_.run_s : -1;
  int status = Exited(0);
  const double fail = attempt_ == 0 ? (plan_.first_fail >= 0 ? origin_ + plan_.first_fail : -1)
                                    : (plan_.refail ? now_ + FaultPlan::kRefailS : -1);
  if (fail >= 0 && (end < 0 || fail < end)) {
    end = std::max(fail, now_);
    status = Exited(kExitFail);
  }
  if (end >= 0) End(child, false, end, status);
  return true;
}

void SimProcs::Signal(size_t child, int sig) {
  Pair& pr = procs_[child];
  const bool terminating = sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
  if (terminating && pr.rank.term_at < 0) pr.rank.term_at = now_;
  if (sig == SIGKILL) {
    // --grace between a rank's SIGTERM and its SIGKILL (only a second
    // signal from the launcher may cut it short: the simulator sends one).
    if (pr.rank.alive && pr.rank.term_at >= 0 && now_ < pr.rank.term_at + grace_s_ - 1e-9)
      violation = "rank " + std::to_string(shim_) + " was sent SIGKILL " +
                  std::to_string(now_ - pr.rank.term_at) + " s after its SIGTERM (--grace " +
                  std::to_string(grace_s_) + " s)";
    End(child, false, now_ + kKillS, Killed(SIGKILL));
    End(child, true, now_ + kKillS, Killed(SIGKILL));
    return;
  }
  if (!terminating || plan_.stubborn) return;  // the others are harmless; stubborn ranks ignore it
  End(child, false, now_ + kTermS, Killed(sig));
  // The group's signal reaches what it left behind too.
  if (pr.left.alive) End(child, true, now_ + kTermS, Killed(sig));
}

void SimProcs::Abort(size_t child) { End(child, false, now_ + kAbortS, Killed(SIGABRT)); }

bool SimProcs::SignalStragglers(int sig) {
  bool any = false;
  for (size_t i = 0; i < procs_.size(); ++i) {
    if (!procs_[i].left.alive) continue;
    any = true;
    if (sig == SIGKILL) End(i, true, now_ + kKillS, Killed(SIGKILL));
    else if (!plan_.stubborn) End(i, true, now_ + kTermS, Killed(sig));
  }
  return any;
}

bool SimProcs::StragglersLeft() {
  for (const Pair& p : procs_)
    if (p.left.alive) return true;
  return false;
}

bool SimProcs::OutputOpen() const {
  // The pipes close when the rank and what it left are gone.
  for (const Pair& p : procs_)
    if (p.rank.alive || p.left.alive) return true;
  return false;
}

bool SimProcs::Fire(size_t child, bool straggler, uint64_t epoch, int status, int* out_status) {
  Proc& p = straggler ? procs_[child].left : procs_[child].rank;
  if (!p.alive || p.epoch != epoch) return false;
  p.alive = false;
  p.status = status;
  *out_status = status;
  // A rank that ended before its process group was up wrote no modules.
  return !straggler;
}

// ---- --warm-restart's standbys (launch/warm_slots.h)

void SimProcs::Go(double now) {
  for (Pair& p : procs_) {
    p.due_from = now;
    p.spare = true;  // until a rank of it starts
  }
}

std::string SimProcs::MakeStandby(size_t child) {
  Pair& p = procs_[child];
  const std::string who = "shim " + std::to_string(shim_) + "'s rank " + std::to_string(child);
  if (p.standby.alive) violation = who + " was given a second standby";
  if (stopped) violation = who + "'s standby was made after its shim's stop";
  if (p.due_from < 0 || now_ < p.due_from - 1e-9)
    violation = who + "'s standby was made before it was due";
  p.standby = Proc{true, next_epoch_++, now_};
  const double lost = plan_.standby_lost_s >= 0 ? origin_ + plan_.standby_lost_s : -1;
  if (lost >= now_) schedule_(lost, child, kStandbyProc, p.standby.epoch, Killed(SIGKILL));
  return "";
}

void SimProcs::EndStandby(size_t child) { procs_[child].standby.alive = false; }

bool SimProcs::FireStandby(size_t child, uint64_t epoch, int status, std::string* why) {
  Pair& p = procs_[child];
  if (!p.standby.alive || p.standby.epoch != epoch) return false;
  p.standby.alive = false;
  p.lost = true;
  *why = "its standby (shim " + std::to_string(shim_) + ", rank " + std::to_string(child) +
         ") ended: " + DescribeStatus(status);
  return true;
}

bool SimProcs::StandbysLeft() const {
  for (const Pair& p : procs_)
    if (p.standby.alive) return true;
  return false;
}

// A restart's rank starts from its standby exactly when one lives (and
// takes its order), and one lives when it was due long enough before and
// was not lost: the machine's decisions against the processes' truth.
void SimProcs::CheckWarm(size_t child, WarmStart* warm) {
  Pair& p = procs_[child];
  const std::string who = "shim " + std::to_string(shim_) + "'s rank " + std::to_string(child);
  if (!warm) {
    violation = who + " was restarted with --warm-restart as if it were off";
    return;
  }
  const bool alive = p.standby.alive;
  if (warm->from_standby && !alive) violation = who + " was started from a standby that is gone";
  if (!warm->from_standby && alive)
    violation = who + " was started cold beside its live standby (" + warm->cold + ")";
  // Made as soon as it was due (its rank's start, a spare's go: whatever
  // the moment of the failure), a busy machine's pause later at most.
  const double ready = p.due_from;
  if (p.due_from >= 0 && !p.lost && !alive && now_ >= ready + FaultPlan::kBusyPauseS + 0.5)
    violation = who + "'s standby was due at " + FormatNumber(ready - origin_, "%.3f") +
                " s but none lived at its restart (" + FormatNumber(now_ - origin_, "%.3f") +
                " s): " + warm->cold;
  if (alive && warm->from_standby && plan_.standby_refuse_s >= 0 &&
      now_ >= origin_ + plan_.standby_refuse_s) {
    warm->from_standby = false;
    warm->cold = "its standby (shim " + std::to_string(shim_) + ", rank " +
                 std::to_string(child) + ") did not take its order";
  }
  p.standby.alive = false;  // taken, or ended when it refused
  ++(warm->from_standby ? warm_starts : cold_starts);
}

bool SimProcs::AnyPrinting() const {
  if (!plan_.prints) return false;
  for (const Pair& p : procs_)
    if (p.rank.alive) return true;
  return false;
}

void SimProcs::StartProbe() { probe_until_ = now_ + kProbeS; }

// Each running rank answers after kDumpS; the one that never answers keeps
// the harvest waiting for --dump-timeout.
void SimProcs::StartDumps(double now, DumpAsk ask) {
  ask_ = ask;
  asked_.assign(procs_.size(), false);
  bool any = false, silent = false;
  for (size_t i = 0; i < procs_.size(); ++i) {
    asked_[i] = procs_[i].rank.alive;
    any = any || asked_[i];
    silent = silent || (asked_[i] && i == 0 && plan_.nodump);
  }
  dumps_until_ = !any ? now : now + (silent ? plan_.dump_timeout_s : kDumpS);
}

LocalFailure SimProcs::Failure(size_t child) {
  LocalFailure f;
  f.rank = shim_ * static_cast<int>(procs_.size()) + static_cast<int>(child);
  f.exit_code = ExitCodeFor(procs_[child].rank.status);
  f.status = DescribeStatus(procs_[child].rank.status);
  f.wall_time = wall_epoch_ + now_;
  f.summary = "aml-shim: rank " + std::to_string(f.rank) + " " + f.status + "\n";
  f.failure_json = "{\"rank\":" + std::to_string(f.rank) + "}";
  return f;
}

std::vector<RankStack> SimProcs::Stacks() {
  std::vector<RankStack> out;
  for (size_t i = 0; i < procs_.size(); ++i)
  {
    RankStack r;
    r.rank = shim_ * static_cast<int>(procs_.size()) + static_cast<int>(i);
    r.text = "no Python stack";
    if (i >= asked_.size() || !asked_[i]) {
      r.fr_why = "it had ended";
    } else if (i == 0 && plan_.nodump) {
      r.fr_why = "no dump within --dump-timeout " + FormatRate(plan_.dump_timeout_s) + " s";
    } else {
      // Every rank entered the attempt's last collective but the one that
      // skipped it; none completed it.
      const int64_t last = kLastCollective + attempt_;
      FrSummary s;
      s.rank = r.rank;
      s.version = "2.10";
      FrGroup g;
      g.pg = "0";
      g.desc = "default_pg";
      g.enqueued = i == 0 && plan_.skip ? last - 1 : last;
      g.completed = last - 1;
      g.last.seq = g.enqueued;
      g.last.op = "all_reduce";
      g.last.sizes = "[[4]]";
      g.last.dtype = "Float";
      g.last.state = "scheduled";
      g.last.frame = "<module> (train.py:9)";
      s.groups.push_back(std::move(g));
      r.fr = std::move(s);
    }
    out.push_back(std::move(r));
  }
  return out;
}

// What came: a failure's records as a hang's (each rank's collectives where
// they were); a look's progress (the simulated ranks' collectives do not
// advance while they write nothing: no progress, their records as at a
// verdict) and, with --faults pace, the ranks' entry times.
DumpResult SimProcs::Dumps() {
  DumpResult r;
  if (ask_ == DumpAsk::kRecords) {
    for (RankStack& st : Stacks()) r.records.push_back({st.rank, std::move(st.fr), std::move(st.fr_why)});
  } else if (ask_ == DumpAsk::kLook) {
    for (size_t i = 0; i < asked_.size(); ++i)
      if (asked_[i] && !(i == 0 && plan_.nodump)) ++r.answered;
    r.progress = r.answered * (kLastCollective + attempt_ - 1);
    r.times = Times();
  }
  return r;
}

// --faults pace: step k begins when the slowest node entered step k-1's
// all-reduce; a node enters it after its step's work (the slow node's
// `factor` times longer in one step of `burst`, the stalling node's
// `stall_s` longer in one of `stall_every` and `hiccup_s` in one of
// `hiccup_every`), and a jitter of its own.
double SimProcs::StepAt(int64_t k) const {
  const double p = plan_.step_s;
  const double slow_extra = plan_.slow || plan_.factor > 1 ? (plan_.factor - 1) * p : 0;
  const double step = p * (1 + plan_.jitter) + kAllReduceS;
  const double stalls = plan_.stall_s * static_cast<double>((k - 1) / plan_.stall_every) +
                        plan_.hiccup_s * static_cast<double>((k - 1) / plan_.hiccup_every);
  return origin_ + kPaceStartS + static_cast<double>(k - 1) * step +
         slow_extra * static_cast<double>((k - 1) / plan_.burst) + stalls;
}

std::vector<RankTimes> SimProcs::Times() const {
  if (!plan_.pace || !ran_) return {};
  const double p = plan_.step_s;
  const double avg = p * (1 + plan_.jitter) + kAllReduceS + (plan_.factor - 1) * p / plan_.burst +
                     plan_.stall_s / plan_.stall_every + plan_.hiccup_s / plan_.hiccup_every;
  // The last step whose all-reduce completed by now.
  int64_t k = std::max<int64_t>(0, static_cast<int64_t>((now_ - origin_ - kPaceStartS) / avg));
  while (k > 0 && StepAt(k + 1) > now_) --k;
  while (StepAt(k + 2) <= now_) ++k;
  std::vector<RankTimes> out;
  for (size_t i = 0; i < procs_.size(); ++i) {
    if (i >= asked_.size() || !asked_[i]) continue;
    const int rank = shim_ * static_cast<int>(procs_.size()) + static_cast<int>(i);
    RankTimes r{rank, {FrEntryTimes{"0", {}}}};
    for (int64_t q = std::max<int64_t>(1, k - static_cast<int64_t>(kMaxTimedOps) + 1); q <= k;
         ++q) {
      // A jitter drawn from the seed, the rank and the step: replayed alike.
      uint64_t h = plan_.seed ^ (static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ULL) ^
                   (static_cast<uint64_t>(q) * 0xbf58476d1ce4e5b9ULL);
      h = (h ^ (h >> 31)) * 0x94d049bb133111ebULL;
      h ^= h >> 29;
      const double jitter = plan_.jitter * p * static_cast<double>(h % 1000) / 1000.0;
      const bool slow_now = plan_.slow && q % plan_.burst == 0;
      const bool stall_now = plan_.stall && q % plan_.stall_every == 0;
      const bool hiccup_now = plan_.stall && q % plan_.hiccup_every == 0;
      const double at = StepAt(q) + p * (slow_now ? plan_.factor : 1) + jitter +
                        (stall_now ? plan_.stall_s : 0) + (hiccup_now ? plan_.hiccup_s : 0);
      const double wall = wall_epoch_ + at + plan_.skew_s;
      r.groups[0].ops.emplace_back(q, static_cast<int64_t>(wall * 1e9));
    }
    if (!r.groups[0].ops.empty()) out.push_back(std::move(r));
  }
  return out;
}

double SimProcs::FirstOutputWall() const {
  // (A node that starts no ranks in this attempt wrote nothing in it.)
  if (!plan_.prints || started_at.empty() || !ran_) return 0;
  return wall_epoch_ + started_at.back() + kFirstOutputS;
}

void SimProcs::BeginRestart(const RestartOrder& restart, bool print_own_failure) {
  (void)print_own_failure;
  if (restart.roster && restart.node_rank < 0 && ran_) retired = true;
  ran_ = false;
}

}  // namespace aml
