// The oracle's model of the control plane (shim/sim/oracle.h): what the
// documented rules say must happen, worked out from a fault plan alone.
// Private to the oracle's files, one per family of rules:
//   oracle_world.cc     the plan's facts per shim in a tree (who is cut,
//                       frozen, dead, when), the kinds of events
//   oracle_seer.cc      the walk: each attempt's events, the next decisive one,
//                       the back-off
//   oracle_loss.cc      a lost shim: the verdict, --spares (a spare in its place)
//   oracle_takeover.cc  the root lost: its heir takes the job (a new root),
//                       a child of the root moved below the heir
//   oracle_verdict.cc   an attempt's end: the restart rule, the roll-call's
//                       culprit, the job's last verdict and every shim's exit
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shim/base/units.h"
#include "shim/control/job_machine.h"
#include "shim/control/liveness.h"
#include "shim/control/tree_links.h"
#include "shim/sim/oracle.h"

namespace aml {
namespace seer {

// The documented rules (docs/control-plane.md), written here on their own.
constexpr double kInf = 1e18;
constexpr double kWindowS = 0.1;      // rank 0 names the earliest failure of this window
constexpr double kSteadySilenceS = 5; // a steady link is lost after this much silence
constexpr double kCollectS = 20;      // the roll-call waits this long for stacks
// ...and past --dump-timeout, for the ranks' flight records (the simulator's
// ranks answer within SimProcs::kDumpS, or never: FaultPlan::nodump).
constexpr double kDumpTimeoutS = kSimDumpTimeoutS;
constexpr double kDumpS = 1;
// A failure's verdict past --dump-timeout: job_machine.h's kRecordsSlackS
// (imported), and a deliberate half second more for the records' trip up
// the tree and the verdict's down (the oracle's window is the wider).
constexpr double kRecordsWaitS = kRecordsSlackS + 0.5;
constexpr double kEndingWaitS = 30;   // past --grace, for every shim to end its ranks
constexpr double kProgressS = 60;     // an attempt this long made progress
constexpr double kLastWordsS = 1;     // output in a failure's last second is not progress
constexpr double kMaxBackoffS = 30;
constexpr double kFirstOutputS = 0.5; // the simulated ranks print this long after start
constexpr double kCutOffExitS = 31;   // a shim cut off knows it within 30 s (and a beat)

// Facts of the plan, per shim, in the tree rooted at `root`: the join's
// (rank 0's), or a new root's (the shims that reached it: its subtree, and
// the old root's children that linked to it with theirs).
struct World {
  int n = 0;
  int root = 0;
  std::vector<int> parent;        // -1: the root; kOutside: not in this tree
  std::vector<std::vector<int>> kids;  // in the order they linked
  std::vector<int> height;        // levels below it
  std::vector<double> dead_at;    // frozen or killed
  std::vector<double> frozen_at;  // frozen (alive, silent)
  std::vector<double> cut_at;     // the link to its parent stops carrying frames
  std::vector<double> cutoff;     // its path to the root breaks (a death or a cut above it)
  std::vector<double> inner;      // the first death or cut strictly below it
  std::vector<double> signal_at;  // its launcher's SIGTERM
  std::vector<double> first_fail; // its rank's failure in the first attempt
  std::vector<double> unfit_at;   // (--spares) its node fails its check before an attempt from then on
  std::vector<bool> fails;        // it has a failing rank (it fails again in later attempts)
  std::vector<bool> stubborn;
  // Each partition's sides (0: the rest), for links a new tree makes.
  std::vector<std::pair<double, std::vector<bool>>> partitions;
  // What ranks that ended well leave behind is ended after them: SIGTERM,
  // then SIGKILL after min(--grace, 2 s) when it ignores SIGTERM.
  double drain_s = 0;
  bool any_signal = false;
  int max_depth = 0;
  std::set<int> relinked;         // the old root's children linked to this root
  double root_since = 0;          // this root holds the job from then on
  bool In(int s) const { return s >= 0 && s < n && parent[s] != kOutside; }
  static constexpr int kOutside = -2;
};

// When the link between a and b stops carrying frames: a partition with
// them on two sides (a cut between a shim and its parent is its own).
double Split(const World& w, int a, int b);

// A fault's shim: "the root" (Fault::kRoot) is the one that holds the job
// when it comes: `root` from `root_since` on (an earlier root's before).
int FaultShim(const Fault& f, int root, double root_since);

// `relinked`: children of a lost root that linked to `root` (its heir) at
// `since`; a cut of their old link before then no longer matters; `root`
// holds the job from `root_since` on.
World Facts(const FaultPlan& p, const OracleSetup& o, int root, const std::vector<int>& parent,
            const std::set<int>& relinked = {}, double since = 0, double root_since = 0);

World Facts(const FaultPlan& p, const OracleSetup& o);

enum class Kind {
  kFail, kLoss, kSignal, kHang, kEnd, kEndingTimeout, kVerdict, kCollected, kRestarted, kRootLost
};

const char* KindName(Kind k);

struct Event {
  Kind kind = Kind::kFail;
  double lo = 0, hi = 0;  // when rank 0 acts on it
  double t = 0;           // when it happened (a failure's wall clock)
  double at = 0;          // a loss's or a signal's fault: when it came
  int fault = -1;         // and which of the plan's it is
  std::set<int> who;      // its shims (a failure's ranks, a loss's lost shims)
  bool maybe = false;     // it may not reach rank 0 at all
  bool root_may_miss = false;  // the root may be frozen or killed before it acts on it
  std::set<int> others;   // a failure: other failing shims rank 0 may hear in its window
};

// Where the job stands between two decisive events.
struct State {
  int attempt = 1;
  double t_lo = 0, t_hi = 0;  // the attempt's start at rank 0
  double now = 0;             // the last decision: nothing before it comes first
  int restarts = 0;
  struct Past {
    int code;
    bool progress;
    double duration;
    // As rank 0 measures it: from the attempt's start to its end, each
    // known within a window (the back-off counts attempts under 60 s).
    double shortest, longest;
  };
  std::vector<Past> past;
  std::vector<ForeseenAttempt> attempts;
  std::set<int> dropped;  // maybe-events taken as never reaching rank 0
  std::string story;
  // Phases within an attempt's end.
  enum class Phase { kRunning, kDeciding, kCollecting, kRound, kRoundBlocked } phase = Phase::kRunning;
  Event pending;  // kCollecting: the roll-call; kRound: the restart
  int pending_code = 0;
  bool pending_same = false;  // the round ends the job: the same failure again
  // kDeciding: the failed attempt, until rank 0's verdict names it.
  ForeseenAttempt pending_attempt;
  bool pending_progress = false;
  double pending_duration = 0;
  std::vector<double> starts;  // each attempt's start (its earliest)
  // --spares: who holds each NODE_RANK, the spares left, the shims retired
  // (the lost among them in `gone`), the streak of first failures, whether
  // a node of this attempt was retired; kDeciding: the attempt's failing
  // shims that may have been heard in the window (`pending_others`), or a
  // loss as its first failure.
  std::vector<int> holder, spare;
  std::set<int> retired, gone;
  std::set<int> retired_maybe;  // a partition's: rank 0 may stop before it hears them all
  std::vector<Event> losses;    // the losses taken so far
  std::pair<double, double> extra_halt{-1, -1};  // a halt that may come before the end
  // Each attempt's holders, from its start (the earliest).
  std::vector<std::pair<double, std::vector<int>>> rosters;
  int streak_shim = -1, streak = 0;
  bool replaced = false, pending_loss = false;
  std::set<int> pending_others;
  // kRoundBlocked: the round's restart once nothing blocks it, and when
  // the round began (the verdict).
  Event round;
  double round_from = 0;
  std::set<int> pending_missing_min, pending_missing_max;
  std::set<int> missing_min, missing_max;  // the roll-call taken
  std::set<int> culprit;  // the last roll-call's culprit: the shims it may name (-1: none)
  std::vector<std::pair<double, double>> halts, restart_times;
  // A new root (docs/control-plane.md, "A new root"). The root's children
  // lost while they may live (silent), among them a heir (when, at the
  // earliest and the latest: a "no spare left" waits out its cut); the
  // shim that holds the job; those that left the tree at a takeover, with
  // the exit codes they may end with; whether the run is foreseen only
  // loosely (exit codes and the root), a compound of faults these rules
  // do not order.
  double heir_lost_lo = -1, heir_lost_hi = -1;
  double nospare_lo = -1, nospare_hi = -1;  // a "no spare left" that waits, until then
  bool no_record = false;  // the root ends without writing the job's record
  bool unfit_taken = false;  // (a restart's nodes unfit during the round, retired)
  bool unfit_retired = false;  // nodes unfit as the ranks ended, retired then (not the same failure)
  int signalled_running = -1;  // a shim signalled while its ranks surely ran
  int signaller = -1;          // the shim whose launcher's signal ends the job
  bool restart_deferred = false;  // a restart that waits out a lost heir's cut, re-queued
  int root = 0;
  std::map<int, uint8_t> fixed;
  bool loose = false;
};

class Seer {
 public:
  Seer(const FaultPlan& p, const OracleSetup& o) : p_(p), o_(o), w_(Facts(p, o)) {
    L_ = o.slack_s;
    spares_ = p.spares > 0 && w_.n > 1;
    BuildStatics(0);
  }

  // The losses and signals of the plan from `from` on, at the root of the
  // world (w_): when it must act on each. The root's own loss (killed,
  // frozen, or a partition that parts it from a child) is a kRootLost
  // event: with spares its heir may take the job.
  void BuildStatics(double from);

  std::vector<Foreseen> Run();

 private:
  // A silent link (a frozen shim, a cut): lost after 5 s of silence in a
  // steady job, and not before the 30 s of start-up are over; its last
  // frame came up to a beat before the fault (and a pause, when it was
  // busy: --faults busy). Rank 0 hears of it from the
  // shim that found it, within the tree's latency.
  void Silence(double t, Event* e) const {
    e->lo = std::max(t - o_.beat_s - o_.busy_s + kSteadySilenceS, o_.startup_s) - 0.01;
    e->hi = std::max(t + kSteadySilenceS, o_.startup_s) + 2 * L_ + BusySilenceS();
  }

  bool Whole(int s, double by) const { return w_.inner[s] > by; }
  // Rank 0 alone decides at once.
  double Window() const { return w_.n == 1 ? 0 : kWindowS; }

  // With the flight recorder a rank's failure's verdict waits for every
  // shim's records, taken from its running ranks before they end
  // (node_machine.h): kDumpS, or --dump-timeout for a rank that never
  // answers; a shim that cannot answer keeps it to its deadline.
  double RecordsWait(const State& st, double hi) const;

  // Rank 0 heard of the attempt's end (a failure, or with spares a lost
  // holder) between lo and hi: its verdict comes after the window.
  void Decide(State* st, double lo, double hi, const ForeseenAttempt& a, double duration,
              bool loss) const;

  // ---- --spares (docs/control-plane.md, "Spares and retirement")

  // The shims below `s` in the tree.
  std::vector<int> Below(int s) const;
  // Ranks run on `s` in the attempt under way.
  bool Runs(const State& st, int s) const {
    return !spares_ || std::find(st.holder.begin(), st.holder.end(), s) != st.holder.end();
  }
  static int Vacant(const State& st) {
    return static_cast<int>(std::count(st.holder.begin(), st.holder.end(), -1));
  }
  // Retires `s`: true when it held a NODE_RANK.
  static bool Retire(State* st, int s);
  // When `s` stops being reachable from rank 0 (frozen, killed, cut off).
  double Unreachable(int s) const { return std::min(w_.dead_at[s], w_.cutoff[s]); }
  // How much longer the root awaits a silent child of its own under its heir
  // (tree_links_losses.cc, AwaitMoveUntil, imported: kRelinkS): the child's own
  // allowance, measured from a beat before, then a relink. The child's
  // allowance is bounded as the root's own (Silence's), so the wait adds a
  // beat and kRelinkS past the root's finding (and 0.1 s: the child's
  // start-up began up to a join's latency later than the root's).
  double MoveWaitS(int s) const {
    return spares_ && w_.n >= 3 && w_.parent[s] == w_.root ? o_.beat_s + kRelinkS + 0.1 : 0;
  }
  // The latest moment the loss of an unreachable shim is found.
  double FoundBy(int s) const;
  // How much later a busy shim may find a silent link: its allowance grew
  // to kGapFactor times the longest gap its own pause made (liveness.h).
  double BusySilenceS() const {
    return o_.busy_s > 0 ? kGapFactor * (o_.busy_s + o_.beat_s) - kSteadySilenceS : 0;
  }

  // The attempt's own events at rank 0: its first failure, its hang, or
  // its healthy end.
  void AttemptEvents(const State& st, std::vector<Event>* ev) const;

  void Step(State st);

  // Backoff before the next attempt, from the attempts so far (the docs:
  // none for the first of a series of short attempts, then 1 s, 2 s, ...).
  // The back-off after `past`: with each attempt as short as it may have
  // been (`longest` false), or as long.
  static double Backoff(const std::vector<State::Past>& past, bool longest = false);

  void Take(const State& st0, const Event& e, double lo, double hi);

  // The attempt ended with `code`, decided at [lo, hi]: the restart rule.
  void EndAttempt(State st, ForeseenAttempt a, int code, bool progress, double duration,
                  double lo, double hi);

  // A new root's heir is its first child as they linked, in an order the
  // oracle cannot tell when the old root's children relinked to it: a loss
  // is followed with each of those lost as the heir, and with the heir
  // among the others (aml-plane-sim, seed 40414: shim 2, cut, was not the
  // heir its number made it).
  void TakeLossOfSomeHeir(const State& st, const Event& e, double lo, double hi);

  // (--spares) A loss the root hears: the lost shims and every shim below
  // them are retired. A spare's loss is only noted; a NODE_RANK's holder's
  // ends the attempt as a failure (a halt, then the verdict after the
  // window), unless no spare is left for it: the job ends with 125.
  // `heir_is`: the root's heir, when a branch chose it among several.
  void TakeLoss(State st, const Event& e, double lo, double hi, bool heir_last = false,
                int heir_is = kHeirOf);

  // What the root does once the loss is taken (`waits`: a "no spare left"
  // waits out a lost heir's cut).
  void LossVerdict(State st, const Event& e, double lo, double hi, bool held, bool waits);

  // A "no spare left" at `t` waits out the cut of a heir lost alive
  // (job_spares.cc's HeirLostAlive).
  bool Deferred(const State& st, double t) const {
    return st.heir_lost_lo >= 0 && t < st.heir_lost_hi + kMaxSilenceS + 1 + L_;
  }
  // A verdict decided in [lo, hi]: whether its "no spare left" waits, both
  // ways when the window straddles the wait's end (aml-plane-sim, seed
  // 47054081: a hang's roll-call came 1 s after a lost heir's wait).
  std::vector<bool> DeferWays(const State& st, double lo, double hi) const {
    if (Deferred(st, lo) && !Deferred(st, hi)) return {true, false};
    return {Deferred(st, lo)};
  }

  // A restart with no spare for a place left empty waits out a lost heir's
  // cut (the "no spare left" verdict comes then).
  void Defer(Event* restart, const State& st) const;

  // ---- A new root (docs/control-plane.md, "A new root")

  static constexpr int kHeirOf = -3;  // (TakeLoss: the heir is HeirOf's)
  // The root's heir: its first child (in the order they linked) still in
  // the tree; -1: none.
  int HeirOf(const State& st) const;

  // When a shim finds the root lost: its links close at once when the root
  // is killed (each node reads the close at its own moment, within 20 ms),
  // else its silence.
  void RootFound(const Fault& f, Event* e) const;

  // A shim that left the tree at a takeover (the old root, or one that did
  // not reach the heir): what it may end with, as a part cut off ends.
  uint8_t OutsideBits(int s) const;

  // The root's loss as its heir finds it: the root killed or frozen, or
  // parted by a partition from children of its (e.who). The heir (its
  // first child still linked, holding the root's record) gathers the shims
  // that reach it: its own subtree, and each other child of the root that
  // finds the root lost and reaches the heir, with its subtree. With more
  // than half of the job's shims it takes the job: once every shim that
  // counts ended its ranks (or at the election's deadline), and not before
  // an old root alive must have found the cut (31 s after the last silent
  // finding); the root and every shim that did not reach it are retired,
  // the attempt under way ends with the root's loss (125), and the job
  // restarts from there with the heir as its root. Without a majority the
  // heir's side ends (125); an old root alive goes on as its own losses say.
  void TakeRootLoss(const State& st, const Event& e, double lo, double hi);

  // An outcome foreseen loosely: exit codes as wide as they come, the
  // shim that holds the job at the end `root` (-2: any), unless the root
  // may be lost after `f` (then any shim may hold it).
  void Loosely(const State& st, const Fault& f, int root, const std::string& why);

  // A child of the root cut off from it alone moved below the heir `h`:
  // nothing of the job changes; the job goes on in the tree where `c` is
  // the heir's child (a cut of its old link no longer matters). `heir`: `c`
  // is the heir itself, moved below the root's successor `h` (the heir now).
  void Moved(const State& st0, int c, int h, double lo, double hi, bool heir = false);

  // The job goes on in tree `w` from `from` on (a takeover's, or a child
  // moved below the heir): the plan's events are drawn from it anew (the
  // old ones' drops no longer apply), then the world is restored for the
  // other branches.
  void StepInTree(State st, World w, double from);

  void TakeRootLossTo(State st, const Event& e, double lo, double hi, int h);

  // (--spares) Rank 0's verdict on a failed attempt: the streak of the node
  // whose ranks failed first alone (docs/control-plane.md, "Spares and
  // retirement"); --retire-after 2 in a row retires it.
  void Verdict(const State& st0, double lo, double hi);

  // The roll-call's culprit (docs/control-plane.md, "Naming the culprit"):
  // the shim whose first rank skipped the attempt's last collective
  // (FaultPlan::skip), when it runs ranks in this attempt, its record comes
  // (it is no roll-call's silent shim, and answers its pipe), and another
  // shim's ranks surely entered the collective; else none (-1). Each way
  // where the roll-call may or may not hear from it.
  std::set<int> Culprits(const State& st) const;

  // (--spares) A hang whose culprit is one node's counts as that node's
  // failure for the streak; any other hang breaks the streak. False when
  // the node is retired and no spare is left: the job ends (125).
  // `waits`: whether a "no spare left" it leads to waits out a lost heir's
  // cut (DeferWays).
  bool NoteCulprit(State* st, int culprit, const ForeseenAttempt& hang, double lo, double hi,
                   bool waits);

  // The job's last verdict: `code` at rank 0, decided in [lo, hi]; each
  // shim's own exit follows from what reaches it first.
  void Final(const State& st, int code, double lo, double hi, const std::set<int>& lost,
             const std::string& refused);

  // The shims of a heir's side of a partition that parts it from the root
  // before a verdict given by `hi` crossed (empty: none).
  std::set<int> HeirSideUnreached(const State& st, double hi) const;

  const FaultPlan& p_;
  const OracleSetup& o_;
  World w_;
  double L_ = 0.25;
  std::vector<Event> statics_;  // losses and signals: at fixed times
  bool spares_ = false;
  std::set<std::string> refused_also_;  // (Final) other reasons as good as `refused`
  std::vector<Foreseen> out_;
  int steps_ = 0, depth_ = 0;
  static constexpr int kMaxDepth = 400;
};

}  // namespace seer
}  // namespace aml
