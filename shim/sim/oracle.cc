#include "shim/sim/oracle.h"

#include <algorithm>
#include <functional>
#include <map>

#include "shim/base/units.h"
#include "shim/control/job_machine.h"
#include "shim/control/liveness.h"
#include "shim/control/tree_links.h"

namespace aml {
namespace {

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
double Split(const World& w, int a, int b) {
  double t = kInf;
  for (const auto& [at, in] : w.partitions)
    if (in[a] != in[b]) t = std::min(t, at);
  return t;
}

// A fault's shim: "the root" (Fault::kRoot) is the one that holds the job
// when it comes: `root` from `root_since` on (an earlier root's before).
int FaultShim(const Fault& f, int root, double root_since) {
  if (f.shim != Fault::kRoot) return f.shim;
  return f.at_s >= root_since ? root : -1;
}

// `relinked`: children of a lost root that linked to `root` (its heir) at
// `since`; a cut of their old link before then no longer matters; `root`
// holds the job from `root_since` on.
World Facts(const FaultPlan& p, const OracleSetup& o, int root, const std::vector<int>& parent,
            const std::set<int>& relinked = {}, double since = 0, double root_since = 0) {
  World w;
  w.n = static_cast<int>(parent.size());
  w.root = root;
  w.parent = parent;
  w.relinked = relinked;
  w.root_since = root_since;
  w.kids.resize(w.n);
  w.height.assign(w.n, 0);
  w.dead_at.assign(w.n, kInf);
  w.frozen_at.assign(w.n, kInf);
  w.cut_at.assign(w.n, kInf);
  w.cutoff.assign(w.n, kInf);
  w.inner.assign(w.n, kInf);
  w.signal_at.assign(w.n, kInf);
  w.first_fail.assign(w.n, kInf);
  w.unfit_at.assign(w.n, kInf);
  w.fails.assign(w.n, false);
  w.stubborn.assign(w.n, false);
  // Children in the order they linked (the join's, then those relinked).
  std::vector<int> joined = o.join_order;
  if (static_cast<int>(joined.size()) != w.n - 1) {
    joined.clear();
    for (int s = 1; s < w.n; ++s) joined.push_back(s);
  }
  for (int s : joined)
    if (s >= 0 && s < w.n && w.In(s) && parent[s] >= 0 && !relinked.count(s))
      w.kids[parent[s]].push_back(s);
  for (int s : relinked)
    if (w.In(s)) w.kids[parent[s]].push_back(s);
  std::vector<int> stragglers;
  for (const Fault& f : p.faults) {
    const int at = FaultShim(f, root, root_since);
    switch (f.kind) {
      case FaultKind::kFreeze:
        if (at < 0) break;
        w.frozen_at[at] = std::min(w.frozen_at[at], f.at_s);
        [[fallthrough]];
      case FaultKind::kKill:
        if (at < 0) break;
        w.dead_at[at] = std::min(w.dead_at[at], f.at_s);
        break;
      case FaultKind::kCut:
        if (relinked.count(f.shim) && f.at_s < since) break;
        w.cut_at[f.shim] = std::min(w.cut_at[f.shim], f.at_s);
        break;
      case FaultKind::kPartition: {
        std::vector<bool> in(w.n, false);
        for (int s : f.group) in[s] = true;
        w.partitions.emplace_back(f.at_s, in);
        for (int s = 0; s < w.n; ++s)
          if (parent[s] >= 0 && in[s] != in[parent[s]])
            w.cut_at[s] = std::min(w.cut_at[s], f.at_s);
        break;
      }
      case FaultKind::kSigterm:
        w.signal_at[f.shim] = std::min(w.signal_at[f.shim], f.at_s);
        w.any_signal = true;
        break;
      case FaultKind::kFail:
        w.first_fail[f.shim] = std::min(w.first_fail[f.shim], f.at_s);
        w.fails[f.shim] = true;
        break;
      case FaultKind::kStubbornRanks:
        w.stubborn[f.shim] = true;
        break;
      case FaultKind::kStraggler:
        stragglers.push_back(f.shim);
        break;
      case FaultKind::kUnfit:
        w.unfit_at[f.shim] = std::min(w.unfit_at[f.shim], f.at_s);
        break;
      default:
        break;
    }
  }
  for (int s : stragglers)
    w.drain_s = std::max(w.drain_s, w.stubborn[s] ? std::min(o.grace_s, 2.0) : o.term_s);
  // Parents come before their children: one pass down, one up.
  std::vector<int> order, depth(w.n, 0);
  order.push_back(root);
  for (size_t i = 0; i < order.size(); ++i)
    for (int c : w.kids[order[i]]) {
      order.push_back(c);
      depth[c] = depth[order[i]] + 1;
      w.max_depth = std::max(w.max_depth, depth[c]);
    }
  for (int s = 0; s < w.n; ++s)
    if (!w.In(s)) w.cutoff[s] = -1;  // outside: never reached
  for (int s : order)
    if (s != root)
      w.cutoff[s] = std::min({w.cutoff[w.parent[s]], w.dead_at[w.parent[s]], w.cut_at[s]});
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int s = *it;
    for (int c : w.kids[s]) {
      w.inner[s] = std::min({w.inner[s], w.dead_at[c], w.cut_at[c], w.inner[c]});
      w.height[s] = std::max(w.height[s], w.height[c] + 1);
    }
  }
  return w;
}

World Facts(const FaultPlan& p, const OracleSetup& o) { return Facts(p, o, 0, o.parent); }

enum class Kind {
  kFail, kLoss, kSignal, kHang, kEnd, kEndingTimeout, kVerdict, kCollected, kRestarted, kRootLost
};

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kFail: return "failure";
    case Kind::kLoss: return "loss";
    case Kind::kSignal: return "signal";
    case Kind::kHang: return "hang";
    case Kind::kEnd: return "healthy end";
    case Kind::kEndingTimeout: return "restart round timed out";
    case Kind::kVerdict: return "verdict";
    case Kind::kCollected: return "roll-call";
    case Kind::kRestarted: return "restart";
    case Kind::kRootLost: return "the root's loss";
  }
  return "?";
}

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
  std::set<int> lost_alive;
  double heir_lost_lo = -1, heir_lost_hi = -1;
  double nospare_lo = -1, nospare_hi = -1;  // a "no spare left" that waits, until then
  bool no_record = false;  // the root ends without writing the job's record
  bool unfit_taken = false;  // (a restart's nodes unfit during the round, retired)
  bool unfit_retired = false;  // nodes unfit as the ranks ended, retired then (not the same failure)
  int signalled_running = -1;  // a shim signalled while its ranks surely ran
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
  void BuildStatics(double from) {
    statics_.clear();
    const int root = w_.root;
    for (size_t i = 0; i < p_.faults.size(); ++i) {
      const Fault& f = p_.faults[i];
      const int s = FaultShim(f, root, from);
      if (f.at_s < from) continue;
      Event e;
      e.at = f.at_s;
      e.fault = static_cast<int>(i);
      if (f.kind == FaultKind::kKill || f.kind == FaultKind::kFreeze || f.kind == FaultKind::kCut) {
        if (!w_.In(s)) continue;
        if (s == root) {
          if (f.kind == FaultKind::kCut) continue;  // the root has no parent
          e.kind = Kind::kRootLost;
          e.who = {s};
          // Its children find it lost: a kill's closes at once, a freeze's silence.
          if (f.kind == FaultKind::kKill) {
            e.lo = f.at_s;
            e.hi = f.at_s + 0.02 + 2 * L_;
          } else {
            Silence(f.at_s, &e);
          }
          statics_.push_back(e);
          continue;
        }
        e.kind = Kind::kLoss;
        e.who = {s};
        if (f.kind == FaultKind::kKill && w_.cut_at[s] > f.at_s) {
          e.lo = f.at_s;  // its links close: found at once
          e.hi = f.at_s + 2 * L_;
        } else {  // (a kill behind a cut closes nothing that arrives)
          Silence(f.at_s, &e);
          e.hi += MoveWaitS(s);
        }
        // Found by its parent, which must still reach the root.
        if (w_.cutoff[w_.parent[s]] < e.lo || w_.dead_at[w_.parent[s]] < e.lo) continue;
        e.maybe = w_.cutoff[w_.parent[s]] < e.hi || w_.dead_at[w_.parent[s]] < e.hi;
        // A child of the root cut off: as a partition that parts its
        // subtree, its heir may be there (aml-plane-sim, seed 932938142).
        if (f.kind == FaultKind::kCut && w_.parent[s] == root && spares_) e.kind = Kind::kRootLost;
        statics_.push_back(e);
      } else if (f.kind == FaultKind::kPartition) {
        e.kind = Kind::kLoss;
        Silence(f.at_s, &e);
        std::vector<bool> in(w_.n, false);
        for (int g : f.group) in[g] = true;
        bool root_child = false;
        for (int c = 0; c < w_.n; ++c)
          if (c != root && w_.In(c) && in[c] != in[w_.parent[c]] &&
              w_.cutoff[w_.parent[c]] >= e.lo && w_.dead_at[w_.parent[c]] >= e.lo) {
            e.who.insert(c);
            if (w_.parent[c] == root) root_child = true;
          }
        // A child of the root on the other side: its heir may be there.
        if (root_child && spares_) e.kind = Kind::kRootLost;
        if (root_child) e.hi += MoveWaitS(*std::find_if(e.who.begin(), e.who.end(), [&](int c) {
                                  return w_.parent[c] == root;
                                }));
        if (!e.who.empty()) statics_.push_back(e);
      } else if (f.kind == FaultKind::kSigterm) {
        if (!w_.In(s) || w_.dead_at[s] <= f.at_s) continue;  // a frozen shim takes no signal
        e.kind = Kind::kSignal;
        e.lo = f.at_s;
        e.hi = f.at_s + 2 * L_;
        e.who = {s};
        if (s != root && w_.cutoff[s] < e.hi) {
          if (w_.cutoff[s] < e.lo - L_) continue;  // its bye never reaches the root
          e.maybe = true;
        }
        statics_.push_back(e);
      }
    }
  }

  std::vector<Foreseen> Run() {
    State st;
    st.starts.push_back(0);
    if (spares_) {
      for (int s = 0; s < w_.n - p_.spares; ++s) st.holder.push_back(s);
      for (int s = w_.n - p_.spares; s < w_.n; ++s) st.spare.push_back(s);
      st.rosters.emplace_back(0, st.holder);
    }
    Step(st);
    if (out_.empty()) {  // no branch ended: a rule above is incomplete
      Foreseen f;
      f.story = "the oracle found no outcome";
      f.codes.assign(w_.n, 0);
      out_.push_back(f);
    }
    return out_;
  }

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
  double RecordsWait(const State& st, double hi) const {
    if (o_.hang_s <= 0 || w_.n == 1) return 0;
    bool all = p_.nodump < 0;
    for (int s = 0; s < w_.n && all; ++s)
      if (w_.In(s) && !st.gone.count(s) &&
          std::min(w_.dead_at[s], w_.cutoff[s]) < hi + kDumpS + 4 * L_)
        all = false;
    return all ? kDumpS + 2 * L_ : kDumpTimeoutS + kRecordsWaitS;
  }

  // Rank 0 heard of the attempt's end (a failure, or with spares a lost
  // holder) between lo and hi: its verdict comes after the window.
  void Decide(State* st, double lo, double hi, const ForeseenAttempt& a, double duration,
              bool loss) const {
    st->phase = State::Phase::kDeciding;
    st->pending = Event{};
    st->pending.kind = Kind::kVerdict;
    st->pending.lo = lo + Window();
    st->pending.hi = hi + Window() + 2 * L_;
    st->pending_attempt = a;
    st->pending_duration = duration;
    st->pending_loss = loss;
  }

  // ---- --spares (docs/control-plane.md, "Spares and retirement")

  // The shims below `s` in the tree.
  std::vector<int> Below(int s) const {
    std::vector<int> out = {s};
    for (size_t i = 0; i < out.size(); ++i)
      for (int c : w_.kids[out[i]]) out.push_back(c);
    out.erase(out.begin());
    return out;
  }
  // Ranks run on `s` in the attempt under way.
  bool Runs(const State& st, int s) const {
    return !spares_ || std::find(st.holder.begin(), st.holder.end(), s) != st.holder.end();
  }
  static int Vacant(const State& st) {
    return static_cast<int>(std::count(st.holder.begin(), st.holder.end(), -1));
  }
  // Retires `s`: true when it held a NODE_RANK.
  static bool Retire(State* st, int s) {
    st->retired.insert(s);
    st->spare.erase(std::remove(st->spare.begin(), st->spare.end(), s), st->spare.end());
    for (int& h : st->holder)
      if (h == s) {
        h = -1;
        return true;
      }
    return false;
  }
  // When `s` stops being reachable from rank 0 (frozen, killed, cut off).
  double Unreachable(int s) const { return std::min(w_.dead_at[s], w_.cutoff[s]); }
  // How much longer the root awaits a silent child of its own under its heir
  // (tree_links.cc, AwaitMoveUntil, imported: kRelinkS): the child's own
  // allowance, measured from a beat before, then a relink. The child's
  // allowance is bounded as the root's own (Silence's), so the wait adds a
  // beat and kRelinkS past the root's finding (and 0.1 s: the child's
  // start-up began up to a join's latency later than the root's).
  double MoveWaitS(int s) const {
    return spares_ && w_.n >= 3 && w_.parent[s] == w_.root ? o_.beat_s + kRelinkS + 0.1 : 0;
  }
  // The latest moment the loss of an unreachable shim is found.
  double FoundBy(int s) const {
    const double t = Unreachable(s);
    if (t >= kInf) return kInf;
    return std::max(t + kSteadySilenceS, o_.startup_s) + 2 * L_ + BusySilenceS() + MoveWaitS(s);
  }
  // How much later a busy shim may find a silent link: its allowance grew
  // to kGapFactor times the longest gap its own pause made (liveness.h).
  double BusySilenceS() const {
    return o_.busy_s > 0 ? kGapFactor * (o_.busy_s + o_.beat_s) - kSteadySilenceS : 0;
  }

  // The attempt's own events at rank 0: its first failure, its hang, or
  // its healthy end.
  void AttemptEvents(const State& st, std::vector<Event>* ev) const {
    if (!p_.quiet) {
      Event e;
      e.kind = Kind::kEnd;
      e.lo = st.t_lo + p_.run_s;
      e.hi = st.t_hi + p_.run_s + w_.drain_s + L_ * (w_.height[w_.root] + 2);
      // Every part of the job must be there to end well (a shim lost before
      // leaves its ancestors waiting for the loss's verdict).
      if (!spares_) {
        if (Whole(w_.root, e.lo - L_)) ev->push_back(e);
      } else {
        // With spares: every NODE_RANK's ranks must say they ended well; a
        // lost spare is only found (and its parent freed) later.
        bool whole = true;
        for (int h : st.holder)
          if (h < 0 || Unreachable(h) < e.lo - L_) whole = false;
        for (int s = 0; s < w_.n && whole; ++s)
          if (s != w_.root && !st.gone.count(s) && Unreachable(s) < e.hi)
            e.hi = std::max(e.hi, FoundBy(s) + L_ * (w_.height[w_.root] + 2));
        if (whole) ev->push_back(e);
      }
    } else if (o_.hang_s > 0) {
      Event e;
      e.kind = Kind::kHang;
      e.lo = st.t_lo + o_.hang_s;
      // Never earlier than --hang-timeout, and up to a beat per level of
      // the tree later (docs/control-plane.md, "Hang watchdog").
      e.hi = st.t_hi + o_.hang_s + o_.beat_s * (w_.max_depth + 1) + 2 * L_;
      ev->push_back(e);
    }
    // Failures: the first attempt's at their times, a later one's a second
    // after its start (unless later attempts succeed).
    std::vector<Event> fails;
    for (int s = 0; s < w_.n; ++s) {
      if (!w_.fails[s] || !Runs(st, s) || !w_.In(s)) continue;
      double lo, hi;
      if (st.attempt == 1) {
        lo = hi = w_.first_fail[s];
        if (lo >= p_.run_s) continue;
      } else {
        if (p_.restarts_succeed) continue;
        lo = st.t_lo + FaultPlan::kRefailS;
        hi = st.t_hi + FaultPlan::kRefailS + L_;
      }
      if (w_.dead_at[s] <= lo || w_.signal_at[s] <= lo) continue;
      Event e;
      e.kind = Kind::kFail;
      e.t = lo;
      e.lo = lo;
      e.hi = hi + 2 * L_;
      e.who = {s};
      if (s != w_.root && w_.cutoff[s] < e.hi) {
        if (w_.cutoff[s] < lo - L_) continue;  // its word never reaches the root
        e.maybe = true;
      }
      if (w_.dead_at[s] < hi || w_.signal_at[s] < hi) e.maybe = true;
      fails.push_back(e);
    }
    if (fails.empty()) return;
    // The earliest failure is the one named; those that may come in the
    // same instant (a later attempt's, all a second after their start) too.
    std::sort(fails.begin(), fails.end(), [](const Event& a, const Event& b) { return a.lo < b.lo; });
    Event first = fails[0];
    for (size_t i = 1; i < fails.size(); ++i) {
      // (A busy shim notes its rank's end when it runs again: a pause late.)
      const bool tie = st.attempt == 1 ? fails[i].lo <= first.lo + 1e-9 + o_.busy_s
                                       : fails[i].lo <= first.hi;
      if (!tie) break;
      first.who.insert(fails[i].who.begin(), fails[i].who.end());
      first.maybe = first.maybe && fails[i].maybe;
    }
    // (--spares) Other failing shims that may be heard in rank 0's window.
    for (size_t i = 1; i < fails.size(); ++i)
      if (!first.who.count(*fails[i].who.begin()) &&
          fails[i].lo <= first.hi + Window() + 2 * L_)
        first.others.insert(*fails[i].who.begin());
    ev->push_back(first);
    // A first failure that may never reach rank 0 leaves room for the next.
    if (first.maybe)
      for (size_t i = 1; i < fails.size(); ++i)
        if (!fails[i].maybe || i + 1 == fails.size()) {
          ev->push_back(fails[i]);
          break;
        }
  }

  void Step(State st) {
    if (++steps_ > 20000) return;  // a bound on the search
    // A bound on its depth (a rule that takes an event without moving on
    // would recurse for ever): said, as no outcome at all.
    struct Depth {
      int* d;
      ~Depth() { --*d; }
    } depth{&depth_};
    if (++depth_ > kMaxDepth) {
      Foreseen f;
      f.story = st.story + "; the oracle went " + std::to_string(kMaxDepth) + " events deep";
      f.codes.assign(static_cast<size_t>(w_.n), 0);
      out_.push_back(std::move(f));
      return;
    }
    std::vector<Event> ev;
    for (size_t i = 0; i < statics_.size(); ++i) {
      if (st.dropped.count(static_cast<int>(i))) continue;
      Event e = statics_[i];
      if (e.hi < st.now) continue;  // it came, and was not first: no longer decisive
      e.lo = std::max(e.lo, st.now);
      e.t = static_cast<double>(i);  // its index, to drop it
      ev.push_back(e);
    }
    using Phase = State::Phase;
    if (st.phase == Phase::kRunning) {
      AttemptEvents(st, &ev);
    } else if (st.phase == Phase::kDeciding || st.phase == Phase::kCollecting ||
               st.phase == Phase::kRound) {
      ev.push_back(st.pending);
    } else if (st.phase == Phase::kRoundBlocked) {
      ev.push_back(st.pending);
    }
    for (Event& e : ev) e.lo = std::max(e.lo, st.now);
    // The root finds a loss only while it lives: frozen or killed first, it
    // never does (its heir finds the root lost instead, a later event), so
    // such a loss comes first only before then (aml-plane-sim, seed
    // 208278278: a partition's losses due as the root froze).
    const double root_gone = w_.dead_at[w_.root];
    std::vector<Event> kept;
    for (Event& e : ev) {
      const bool found_by_root =
          e.kind == Kind::kLoss || (e.kind == Kind::kRootLost && !e.who.count(w_.root));
      if (found_by_root && e.hi > root_gone) {
        if (e.lo >= root_gone) continue;
        e.root_may_miss = true;
        e.hi = root_gone;
      }
      kept.push_back(e);
    }
    ev.swap(kept);
    double min_hi = kInf;
    for (const Event& e : ev)
      if (!e.maybe && !e.root_may_miss) min_hi = std::min(min_hi, e.hi);
    bool any = false;
    for (const Event& e : ev) {
      if (e.lo > min_hi) continue;
      any = true;
      const double hi = std::min(e.hi, min_hi);
      Take(st, e, e.lo, std::max(hi, e.lo));
      if (e.root_may_miss && !e.maybe) {
        State without = st;
        without.dropped.insert(static_cast<int>(e.t));
        Step(without);
      }
      if (e.maybe && (e.kind == Kind::kLoss || e.kind == Kind::kSignal)) {
        State without = st;
        without.dropped.insert(static_cast<int>(e.t));
        Step(without);
      }
    }
    if (!any) {
      // Nothing decisive is left that must come: the job waits for ever
      // (every shim is frozen or cut off from rank 0).
      Final(st, -1, st.now, st.now, {}, "nothing more reaches rank 0");
    }
  }

  // Backoff before the next attempt, from the attempts so far (the docs:
  // none for the first of a series of short attempts, then 1 s, 2 s, ...).
  // The back-off after `past`: with each attempt as short as it may have
  // been (`longest` false), or as long.
  static double Backoff(const std::vector<State::Past>& past, bool longest = false) {
    int short_run = 0;
    for (auto it = past.rbegin();
         it != past.rend() && (longest ? it->longest : it->shortest) < kProgressS; ++it)
      ++short_run;
    if (short_run < 2) return 0;
    double d = 1;
    for (int i = 2; i < short_run; ++i) d = std::min(2 * d, kMaxBackoffS);
    return d;
  }

  void Take(const State& st0, const Event& e, double lo, double hi) {
    State st = st0;
    st.story += (st.story.empty() ? "" : "; ") + std::string(KindName(e.kind)) + " at " +
                FormatNumber(lo, "%.2f") + "-" + FormatNumber(hi, "%.2f") + " s";
    switch (e.kind) {
      case Kind::kSignal: {
        // Its ranks surely ran when it came: an attempt under way here,
        // past its start, before its end: the status of the one that
        // ended first after it (SIGKILL's, when they ignore SIGTERM).
        const int s = *e.who.begin();
        const double sig = w_.signal_at[s];
        if (st.phase == State::Phase::kRunning && Runs(st, s) && st.t_hi + L_ < sig &&
            (p_.quiet || st.t_lo + p_.run_s > sig + L_))
          st.signalled_running = s;
        return Final(st, 143, lo, hi, {}, "");
      }
      case Kind::kRootLost:
        return TakeRootLoss(st, e, lo, hi);
      case Kind::kLoss:
        if (spares_) return TakeLossOfSomeHeir(st, e, lo, hi);
        [[fallthrough]];
      case Kind::kEndingTimeout: {
        // A loss in a restart round keeps the failed attempt's own record;
        // one while the attempt ran (or its roll-call was taken) ends it.
        std::set<int> lost = e.who;
        if (st.phase == State::Phase::kRunning || st.phase == State::Phase::kCollecting) {
          ForeseenAttempt a;
          a.code = 125;
          st.attempts.push_back(a);
        } else if (st.phase == State::Phase::kDeciding) {
          st.attempts.push_back(st.pending_attempt);  // the failure heard first
        }
        return Final(st, 125, lo, hi, lost, "lost");
      }
      case Kind::kEnd:
        return Final(st, 0, lo, hi, {}, "");
      case Kind::kFail:
      case Kind::kHang: {
        const bool hang = e.kind == Kind::kHang;
        const double t = hang ? lo : e.lo;
        if (hang) {
          // Every shim's stacks, but from those frozen or cut off.
          std::set<int> mmin, mmax;
          for (int s = 0; s < w_.n; ++s) {
            if (s == w_.root) continue;
            const double gone = std::min(w_.dead_at[s], w_.cutoff[s]);
            if (gone < lo - L_) mmin.insert(s);
            // Its stacks go once its ranks' records came (a rank that never
            // answers: --dump-timeout): cut off before, they never arrive
            // (aml-plane-sim, seed 454087374).
            const double sent_by = hi + (s == p_.nodump ? kDumpTimeoutS : kDumpS) + 1 + 2 * L_;
            if (gone < sent_by) mmax.insert(s);
          }
          // (With spares the roll-call does not wait for shims retired as lost.)
          bool wait_min = false, wait_max = false;
          for (int s : mmin)
            if (!st.gone.count(s)) wait_min = true;
          for (int s : mmax)
            if (!st.gone.count(s)) wait_max = true;
          st.phase = State::Phase::kCollecting;
          st.pending = Event{};
          st.pending.kind = Kind::kCollected;
          // Each node asks its ranks for their flight records first.
          const double dumps = p_.nodump >= 0 ? kDumpTimeoutS : kDumpS;
          st.pending.lo = !wait_min ? lo : lo + kCollectS + kDumpTimeoutS;
          st.pending.hi = (!wait_max ? hi + dumps : hi + kCollectS + kDumpTimeoutS) + 2 * L_;
          st.pending_missing_min = mmin;
          st.pending_missing_max = mmax;
          st.pending_code = 124;
          st.now = lo;
          return Step(st);
        }
        // The failure: every rank is ended at once; rank 0 names the
        // earliest of its window.
        st.halts.emplace_back(e.lo, e.hi);
        ForeseenAttempt a;
        a.code = 7;
        a.ranks = e.who;
        const double duration = t - st.t_lo;
        // Output in its first half second, before the failure's last second.
        const bool progress = duration >= kProgressS ||
                              (!p_.quiet && st.t_hi + kFirstOutputS + L_ <= t - kLastWordsS);
        const bool maybe_progress =
            !progress && !p_.quiet && st.t_lo + kFirstOutputS <= t - kLastWordsS;
        std::vector<bool> ways = {progress};
        if (maybe_progress) ways = {false, true};  // too close to say
        // Rank 0 decides after its window; a loss or a signal may come
        // first (the failure is then the attempt's record, not its verdict).
        Decide(&st, lo, hi, a, duration, false);
        st.pending.hi += RecordsWait(st, hi);
        st.pending_others = e.others;
        st.now = lo;
        for (bool pr : ways) {
          st.pending_progress = pr;
          Step(st);
        }
        return;
      }
      case Kind::kVerdict:
        if (spares_) return Verdict(st, lo, hi);
        return EndAttempt(st, st.pending_attempt, 7, st.pending_progress, st.pending_duration,
                          lo, hi);
      case Kind::kCollected: {
        ForeseenAttempt a;
        a.code = 124;
        a.hang = true;
        st.missing_min = st.pending_missing_min;
        st.missing_max = st.pending_missing_max;
        for (int culprit : Culprits(st)) {
          State one = st;
          one.culprit = {culprit};
          if (!NoteCulprit(&one, culprit, a, lo, hi)) continue;  // no spare left: the end
          EndAttempt(one, a, 124, true, hi - st.t_lo, lo, hi);
        }
        return;
      }
      case Kind::kRestarted: {
        // (--spares) Each node whose check failed as its ranks ended (it
        // was unfit before the round began) is retired: a spare takes its
        // place, or the job ends when none is left.
        // A node that became unfit during the round (it checks as its
        // ranks end) may be retired or not: both.
        if (spares_) {
          std::vector<int> maybe;
          for (int s = 0; s < w_.n; ++s)
            if (w_.unfit_at[s] > st.round_from && w_.unfit_at[s] <= hi && !st.gone.count(s) &&
                !st.retired.count(s) && w_.In(s))
              maybe.push_back(s);
          if (!maybe.empty() && !st.unfit_taken) {
            State with = st;
            with.unfit_taken = true;
            for (int s : maybe) {
              Retire(&with, s);
              with.pending_same = false;
            }
            Take(with, e, lo, hi);
          }
          bool unfit = false;
          for (int s = 0; s < w_.n; ++s)
            if (w_.unfit_at[s] <= st.round_from && !st.gone.count(s) && !st.retired.count(s) &&
                w_.In(s)) {
              Retire(&st, s);
              unfit = true;
            }
          st.unfit_taken = false;
          if (unfit || st.unfit_retired) st.pending_same = false;
          st.unfit_retired = false;
          if (Vacant(st) > static_cast<int>(st.spare.size())) {
            // After a heir lost alive the restart waits out its cut: what
            // comes meanwhile (another loss, the root's own) comes first.
            if (!st.restart_deferred && Deferred(st, lo)) {
              st.restart_deferred = true;
              st.nospare_lo = st.heir_lost_lo + kMaxSilenceS + 1;
              st.nospare_hi = st.heir_lost_hi + kMaxSilenceS + 1 + 2 * L_;
              st.pending = e;
              st.pending.lo = std::max(lo, st.nospare_lo);
              st.pending.hi = std::max(hi, st.nospare_hi);
              st.now = lo;
              return Step(st);
            }
            st.story += unfit ? "; a node unfit, no spare left" : "; no spare left";
            return Final(st, 125, st.nospare_lo >= 0 ? lo : st.round_from, hi, {}, "nospare");
          }
        }
        // The round is over: the same failure twice without progress is
        // not restarted; else the next attempt (the restart line names the
        // last one's failure).
        st.attempts.back().announced = true;
        if (st.pending_same) {
          st.story += "; not restarted (same)";
          return Final(st, st.pending_code, lo, hi, {}, "same");
        }
        st.phase = State::Phase::kRunning;
        st.restart_times.emplace_back(lo, hi);
        if (spares_) {
          // A spare, lowest launcher rank first, for each retired NODE_RANK.
          for (int& h : st.holder)
            if (h < 0 && !st.spare.empty()) {
              h = st.spare.front();
              st.spare.erase(st.spare.begin());
            }
          st.replaced = false;
          st.rosters.emplace_back(lo, st.holder);
        }
        st.attempt += 1;
        st.restarts += 1;
        st.starts.push_back(lo);
        st.t_lo = lo;
        st.t_hi = hi;
        st.now = lo;
        return Step(st);
      }
    }
  }

  // The attempt ended with `code`, decided at [lo, hi]: the restart rule.
  void EndAttempt(State st, ForeseenAttempt a, int code, bool progress, double duration,
                  double lo, double hi) {
    // (A spare in the place of a retired node: neither the loss nor the
    // same failure again stops the restarts.)
    const bool same = !st.replaced && !st.past.empty() && !st.past.back().progress && !progress &&
                      st.past.back().code == code;
    // What needs no output is decided at once; whether the attempts made
    // progress only once every shim said its ranks ended (the round).
    std::string refused;
    if (p_.max_restarts <= 0) refused = "none";
    else if (st.restarts >= p_.max_restarts) refused = "spent";
    st.past.push_back({code, progress, duration, duration - (st.t_hi - st.t_lo),
                       duration + (hi - lo) + 2 * L_});
    if (!refused.empty()) {
      a.announced = true;  // the stop names it
      st.attempts.push_back(a);
      st.story += "; not restarted (" + refused + ")";
      return Final(st, code, lo, hi, {}, refused == "none" ? "" : refused);
    }
    // A restart round: every shim ends its ranks and says so; then the
    // back-off; then every shim starts them again.
    st.attempts.push_back(a);
    // Every shim must answer: one frozen or cut off before the round
    // blocks it (the round times out as lost, unless its loss is found
    // first); one lost while the round may already be over may not.
    bool stubborn = false;
    double gone = kInf;
    for (int s = 0; s < w_.n; ++s) {
      if (!st.gone.count(s)) gone = std::min({gone, w_.dead_at[s], w_.cutoff[s]});
      if (w_.stubborn[s]) stubborn = true;
    }
    const double end_s = stubborn ? o_.grace_s : o_.term_s;
    // (--spares) A node unfit by now says so as its ranks end, and is
    // retired then: with no spare for its place the job ends there, unless
    // a heir lost alive may yet hold it (the verdict waits out its cut).
    if (spares_) {
      State unfit = st;
      bool any = false;
      for (int s = 0; s < w_.n; ++s)
        if (w_.unfit_at[s] <= lo && w_.In(s) && !unfit.gone.count(s) && !unfit.retired.count(s) &&
            w_.dead_at[s] > hi && w_.cutoff[s] > hi) {
          Retire(&unfit, s);
          any = true;
        }
      if (any && Vacant(unfit) > static_cast<int>(unfit.spare.size())) {
        if (!Deferred(st, lo)) {
          unfit.story += "; a node unfit as its ranks end, no spare left";
          return Final(unfit, 125, lo, hi + end_s + 2 * L_, {}, "nospare");
        }
        unfit.nospare_lo = st.heir_lost_lo + kMaxSilenceS + 1;
        unfit.nospare_hi = st.heir_lost_hi + kMaxSilenceS + 1 + 2 * L_;
      }
      // Retired then, whether the round ends or is blocked: a spare lost
      // later may leave its place empty (aml-plane-sim, seed 462318592).
      if (any) {
        st = unfit;
        st.unfit_retired = true;
      }
    }
    const double backoff = same ? 0 : Backoff(st.past, true);
    const double backoff_max = same ? 0 : Backoff(st.past);
    st.now = lo;
    st.round = Event{};
    st.round.kind = Kind::kRestarted;
    st.round.lo = lo + backoff;
    st.round.hi = hi + end_s + backoff_max + 4 * L_;
    st.round_from = lo;
    st.pending_same = same;
    st.pending_code = code;
    Defer(&st.round, st);
    if (gone < hi + end_s + 2 * L_) {
      State blocked = st;
      blocked.phase = State::Phase::kRoundBlocked;
      blocked.pending = Event{};
      blocked.pending.kind = Kind::kEndingTimeout;
      blocked.pending.lo = lo + o_.grace_s + kEndingWaitS;
      blocked.pending.hi = hi + o_.grace_s + kEndingWaitS + 2 * L_;
      blocked.story += "; restart round blocked";
      Step(blocked);
      if (gone < lo) return;
    }
    st.phase = State::Phase::kRound;
    // (The ranks were halted as rank 0 heard of the failure: they may
    // have ended within the window.)
    st.pending = st.round;
    st.story += "; back-off " + FormatNumber(backoff, "%.0f") + " s";
    return Step(st);
  }

  // A new root's heir is its first child as they linked, in an order the
  // oracle cannot tell when the old root's children relinked to it: a loss
  // is followed with each of those lost as the heir, and with the heir
  // among the others (aml-plane-sim, seed 40414: shim 2, cut, was not the
  // heir its number made it).
  void TakeLossOfSomeHeir(const State& st, const Event& e, double lo, double hi) {
    const int first = HeirOf(st);
    if (first < 0 || !w_.relinked.count(first)) return TakeLoss(st, e, lo, hi);
    std::vector<int> heirs;  // (a copy: each branch may change what is known)
    int other = -1;
    for (int c : w_.kids[w_.root]) {
      if (st.gone.count(c)) continue;
      if (e.who.count(c)) heirs.push_back(c);
      else if (other < 0) other = c;
    }
    heirs.push_back(other);  // -1: none left to be it
    for (int h : heirs) TakeLoss(st, e, lo, hi, false, h);
  }

  // (--spares) A loss the root hears: the lost shims and every shim below
  // them are retired. A spare's loss is only noted; a NODE_RANK's holder's
  // ends the attempt as a failure (a halt, then the verdict after the
  // window), unless no spare is left for it: the job ends with 125.
  // `heir_is`: the root's heir, when a branch chose it among several.
  void TakeLoss(State st, const Event& e, double lo, double hi, bool heir_last = false,
                int heir_is = kHeirOf) {
    // A child of the root lost while it may live (its link fell silent:
    // frozen, cut, or beyond a partition), the root's heir among them: a
    // heir alive may take the job beyond the cut (job_spares.cc).
    const int heir = heir_is != kHeirOf ? heir_is : HeirOf(st);
    const Fault* f = e.fault >= 0 ? &p_.faults[static_cast<size_t>(e.fault)] : nullptr;
    const bool silent = f && (f->kind != FaultKind::kKill ||
                              w_.cut_at[FaultShim(*f, w_.root, 0)] <= f->at_s);
    if (silent && heir >= 0 && e.who.count(heir) && e.who.size() > 1 && !heir_last) {
      // The losses of one moment are heard one by one: those heard before
      // the heir's may already leave no spare (its verdict, written, then).
      TakeLoss(st, e, lo, hi, true, heir);
    }
    if (silent) {
      for (int s : e.who)
        if (w_.parent[s] == w_.root && !st.gone.count(s)) st.lost_alive.insert(s);
      if (heir >= 0 && e.who.count(heir) && !heir_last) {
        st.heir_lost_lo = lo;
        st.heir_lost_hi = hi;
        if (st.nospare_lo >= 0) {  // a restart that waits, waits for this cut now
          st.restart_deferred = false;
          st.nospare_lo = lo + kMaxSilenceS + 1;
          st.nospare_hi = hi + kMaxSilenceS + 1 + 2 * L_;
        }
      }
    }
    st.dropped.insert(static_cast<int>(e.t));
    st.losses.push_back(e);
    bool held = false;
    for (int s : e.who) {
      std::vector<int> cut = Below(s);
      cut.push_back(s);
      for (int c : cut)
        if (st.gone.insert(c).second && Retire(&st, c)) held = true;
    }
    st.now = lo;
    // No spare left after a heir was lost alive: the verdict waits until
    // every loss of that cut is found (31 s; more than half lost by then is
    // "no majority"), the attempt ending meanwhile as for any lost holder.
    const bool majority = w_.n >= 3 && static_cast<int>(st.gone.size()) * 2 > w_.n;
    const bool nospare = Vacant(st) > static_cast<int>(st.spare.size());
    if (!majority && nospare && st.heir_lost_lo >= 0 &&
        lo < st.heir_lost_hi + kMaxSilenceS + 1 + L_) {
      State waits = st;
      waits.nospare_lo = st.heir_lost_lo + kMaxSilenceS + 1;
      waits.nospare_hi = st.heir_lost_hi + kMaxSilenceS + 1 + 2 * L_;
      LossVerdict(waits, e, lo, hi, held, true);
      if (hi < st.heir_lost_lo + kMaxSilenceS + 1) return;  // it surely waits
    }
    LossVerdict(st, e, lo, hi, held, false);
  }

  // What the root does once the loss is taken (`waits`: a "no spare left"
  // waits out a lost heir's cut).
  void LossVerdict(State st, const Event& e, double lo, double hi, bool held, bool waits) {
    using Phase = State::Phase;
    // More than half of the shims lost (docs/control-plane.md, "A new
    // root"): the root ends its part, as when no spare is left.
    const bool majority = w_.n >= 3 && static_cast<int>(st.gone.size()) * 2 > w_.n;
    const bool nospare = !waits && Vacant(st) > static_cast<int>(st.spare.size());
    if (majority || nospare) {
      // The root hears the losses of one moment one by one (this one, those
      // taken just before, those due now) and stops at the first it has no
      // spare for: it may name any of them, any of them may be retired by
      // then, and a first one that left a spare may have halted the ranks.
      std::set<int> named = e.who;
      for (const Event& l : st.losses)
        if (l.hi >= lo) named.insert(l.who.begin(), l.who.end());
      for (size_t i = 0; i < statics_.size(); ++i)
        if ((statics_[i].kind == Kind::kLoss || statics_[i].kind == Kind::kRootLost) &&
            !st.dropped.count(static_cast<int>(i)) && statics_[i].lo <= hi)
          named.insert(statics_[i].who.begin(), statics_[i].who.end());
      for (int s : named) {
        std::vector<int> cut = Below(s);
        cut.push_back(s);
        for (int c : cut) {
          st.retired.erase(c);
          st.retired_maybe.insert(c);
        }
      }
      if (st.phase == Phase::kRunning) st.extra_halt = {lo, hi};
      if (st.phase == Phase::kRunning || st.phase == Phase::kCollecting) {
        ForeseenAttempt a;
        a.code = 125;
        st.attempts.push_back(a);
      } else if (st.phase == Phase::kDeciding) {
        ForeseenAttempt a = st.pending_attempt;
        a.announced = false;
        st.attempts.push_back(a);
      }
      // Which of the two it finds first, with the losses heard one by one:
      // either, where both hold once every loss named is in.
      std::set<int> all = st.gone;
      for (int s : named) {
        all.insert(s);
        for (int c : Below(s)) all.insert(c);
      }
      int vacant = 0;
      for (int h : st.holder)
        if (all.count(h) || h < 0) ++vacant;
      int spares_left = 0;
      for (int sp : st.spare)
        if (!all.count(sp)) ++spares_left;
      const bool could_majority = w_.n >= 3 && static_cast<int>(all.size()) * 2 > w_.n;
      const bool could_nospare =
          vacant > spares_left &&
          !(st.heir_lost_lo >= 0 && hi < st.heir_lost_lo + kMaxSilenceS + 1);
      st.story += majority ? "; no majority" : "; no spare left";
      // Without a majority the root writes the job's record only when no
      // heir it lost alive could hold more than half: the root's children
      // lost alive, with the shims below them.
      if (majority && st.heir_lost_lo >= 0) {
        std::set<int> side;
        for (int c : st.lost_alive) {
          side.insert(c);
          for (int b : Below(c)) side.insert(b);
        }
        if (static_cast<int>(side.size()) * 2 > w_.n) {
          st.no_record = true;
          st.story += " (no record: its heir may hold the job)";
        }
      }
      refused_also_.clear();
      if (st.no_record && could_nospare) {
        // "No spare left" (its record written) may come first.
        State spare_first = st;
        spare_first.no_record = false;
        Final(spare_first, 125, lo, hi, named, "nospare");
      }
      if (could_majority) refused_also_.insert("majority");
      if (could_nospare && !st.no_record) refused_also_.insert("nospare");
      Final(st, 125, lo, hi, named, majority ? "majority" : "nospare");
      refused_also_.clear();
      return;
    }
    if (held) st.replaced = true;
    switch (st.phase) {
      case Phase::kRunning: {
        if (!held) return Step(st);
        st.halts.emplace_back(lo, hi);
        ForeseenAttempt a;
        a.code = 125;
        Decide(&st, lo, hi, a, lo - st.t_lo, true);
        st.pending_progress = true;
        return Step(st);
      }
      case Phase::kCollecting: {
        // The roll-call no longer waits for the lost.
        bool waits_for = false;
        for (int s : st.pending_missing_min)
          if (!st.gone.count(s)) waits_for = true;
        if (!waits_for) st.pending.lo = std::min(st.pending.lo, std::max(lo, st.now));
        return Step(st);
      }
      case Phase::kRoundBlocked: {
        double gone = kInf;
        for (int s = 0; s < w_.n; ++s)
          if (!st.gone.count(s)) gone = std::min(gone, Unreachable(s));
        // Still blocked by a shim unreachable since before the round may
        // have reached it; one lost later may have answered first.
        if (gone < st.round.hi) {
          Step(st);
          if (gone < st.round_from) return;
        }
        st.phase = Phase::kRound;
        st.pending = st.round;
        st.pending.lo = std::max(st.pending.lo, lo);
        st.pending.hi = std::max(st.pending.hi, hi + Backoff(st.past) + 4 * L_);
        Defer(&st.pending, st);
        return Step(st);
      }
      case Phase::kRound:
        Defer(&st.pending, st);
        return Step(st);
      default:
        return Step(st);
    }
  }

  // A "no spare left" at `t` waits out the cut of a heir lost alive
  // (job_spares.cc's HeirLostAlive).
  bool Deferred(const State& st, double t) const {
    return st.heir_lost_lo >= 0 && t < st.heir_lost_hi + kMaxSilenceS + 1 + L_;
  }

  // A restart with no spare for a place left empty waits out a lost heir's
  // cut (the "no spare left" verdict comes then).
  void Defer(Event* restart, const State& st) const {
    if (st.nospare_lo < 0 || Vacant(st) <= static_cast<int>(st.spare.size())) return;
    restart->lo = std::max(restart->lo, st.nospare_lo);
    restart->hi = std::max(restart->hi, st.nospare_hi);
  }

  // ---- A new root (docs/control-plane.md, "A new root")

  static constexpr int kHeirOf = -3;  // (TakeLoss: the heir is HeirOf's)
  // The root's heir: its first child (in the order they linked) still in
  // the tree; -1: none.
  int HeirOf(const State& st) const {
    for (int c : w_.kids[w_.root])
      if (!st.gone.count(c)) return c;
    return -1;
  }

  // When a shim finds the root lost: its links close at once when the root
  // is killed (each node reads the close at its own moment, within 20 ms),
  // else its silence.
  void RootFound(const Fault& f, Event* e) const {
    if (f.kind == FaultKind::kKill) {
      e->lo = f.at_s;
      e->hi = f.at_s + 0.02 + 2 * L_;
    } else {
      Silence(f.at_s, e);
    }
  }

  // A shim that left the tree at a takeover (the old root, or one that did
  // not reach the heir): what it may end with, as a part cut off ends.
  uint8_t OutsideBits(int s) const {
    uint8_t bits = kExit125;
    if (w_.any_signal) bits |= kExit143 | kExit137;
    if (w_.fails[s]) bits |= kExit7;
    if (o_.hang_s > 0 && p_.quiet) bits |= kExit124;
    if (w_.dead_at[s] < kInf) bits |= kNoExit;
    return bits;
  }

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
  void TakeRootLoss(const State& st, const Event& e, double lo, double hi) {
    // A new root's heir is its first child as they linked: its own from the
    // join, else one of the old root's children that linked to it, in an
    // order the oracle cannot tell (each is followed).
    const int first = HeirOf(st);
    if (first < 0 || !w_.relinked.count(first)) return TakeRootLossTo(st, e, lo, hi, first);
    std::vector<int> heirs;  // (a copy: each branch swaps the world)
    for (int c : w_.kids[w_.root])
      if (!st.gone.count(c)) heirs.push_back(c);
    for (int c : heirs) TakeRootLossTo(st, e, lo, hi, c);
  }

  // An outcome foreseen loosely: exit codes as wide as they come, the
  // shim that holds the job at the end `root` (-2: any), unless the root
  // may be lost after `f` (then any shim may hold it).
  void Loosely(const State& st, const Fault& f, int root, const std::string& why) {
    Foreseen lax;
    lax.story = st.story + "; " + why;
    lax.root = root;
    for (const Fault& g : p_.faults)
      if ((g.shim == Fault::kRoot || g.kind == FaultKind::kPartition ||
           g.kind == FaultKind::kKill || g.kind == FaultKind::kFreeze ||
           g.kind == FaultKind::kCut) &&
          g.at_s > f.at_s)
        lax.root = -2;
    lax.loose = true;
    lax.codes.assign(static_cast<size_t>(w_.n), kExit0 | kExit7 | kExit124 | kExit125 |
                                                   kExit137 | kExit143 | kNoExit);
    out_.push_back(std::move(lax));
  }

  // A child of the root cut off from it alone moved below the heir `h`:
  // nothing of the job changes; the job goes on in the tree where `c` is
  // the heir's child (a cut of its old link no longer matters).
  void Moved(const State& st0, int c, int h, double lo, double hi) {
    State st = st0;
    st.now = std::max(st.now, lo);
    st.story += "; shim " + std::to_string(c) + " moves below the heir, shim " +
                std::to_string(h) + ", and stays in the job";
    std::vector<int> parent = w_.parent;
    parent[static_cast<size_t>(c)] = h;
    std::set<int> relinked = w_.relinked;
    relinked.insert(c);
    StepInTree(std::move(st), Facts(p_, o_, w_.root, parent, relinked, hi, w_.root_since), lo);
  }

  // The job goes on in tree `w` from `from` on (a takeover's, or a child
  // moved below the heir): the plan's events are drawn from it anew (the
  // old ones' drops no longer apply), then the world is restored for the
  // other branches.
  void StepInTree(State st, World w, double from) {
    World saved = std::move(w_);
    std::vector<Event> saved_statics = statics_;
    st.dropped.clear();
    w_ = std::move(w);
    BuildStatics(from);
    Step(st);
    w_ = std::move(saved);
    statics_ = std::move(saved_statics);
  }

  void TakeRootLossTo(State st, const Event& e, double lo, double hi, int h) {
    const int r = w_.root;
    const Fault& f = p_.faults[static_cast<size_t>(e.fault)];
    const bool dies = e.who.count(r) > 0;
    Event loss = e;  // the root's own view of a partition
    loss.kind = Kind::kLoss;
    // A partition that parts several of the root's children: the root
    // finds them one by one (each awaited below its heir, MoveWaitS, unless
    // it is the heir or the heir is gone by then), so a verdict may come
    // between them ("spent" before "no majority", a restart before the
    // rest are found): foreseen loosely beside the strict outcomes.
    if (!dies && e.who.size() > 1 && spares_ && w_.n >= 3)
      Loosely(st, f, r, "the root's children across the cut are found one by one (loosely)");
    if (!dies && (h < 0 || !e.who.count(h))) {
      // The heir stays with the root: its losses, as any. A child of the
      // root cut off from it alone (its own link) finds the root silent
      // and links to the heir, which keeps it in the job below it and says
      // so to the root ("moved"); the root awaits it that long (MoveWaitS,
      // within `hi`), but a child whose allowance grew after its last beat
      // may still be found lost first (then it is stopped there, as a
      // loss): the job in the repaired tree is foreseen loosely.
      if (spares_ && f.kind == FaultKind::kCut && h >= 0 && e.who.size() == 1 &&
          !st.gone.count(h) && w_.dead_at[h] > hi && Split(w_, *e.who.begin(), h) > hi) {
        // Strictly so when nothing else comes meanwhile (the root awaits it
        // past its move: no loss, no restart; the job goes on in the tree
        // with the child below the heir).
        const int c = *e.who.begin();
        bool alone = true;
        for (const Fault& g : p_.faults)
          if (&g != &f && g.at_s >= f.at_s - kSteadySilenceS - o_.beat_s && g.at_s <= hi + L_)
            alone = false;
        // (and while the attempt runs on past the move: its end, or a
        // failure's verdict, waits for the child's words said again)
        if (alone && st.phase == State::Phase::kRunning && st.t_lo + p_.run_s > hi + 2 * L_)
          return Moved(st, c, h, lo, hi);
        Loosely(st, f, r, "shim " + std::to_string(c) + " links to the heir, shim " +
                              std::to_string(h) + ", and stays in the job below it (loosely)");
      }
      return spares_ ? TakeLoss(st, loss, lo, hi, false, h) : Take(st, loss, lo, hi);
    }
    st.dropped.insert(static_cast<int>(e.t));
    const bool can = spares_ && w_.n >= 3 && h >= 0 && st.restarts < p_.max_restarts &&
                     w_.dead_at[h] > hi;
    if (!can) {
      if (!dies) return TakeLoss(st, loss, lo, hi, false, h);
      // No heir takes the job: every shim is cut off (a child of the root
      // writes why into failure.json).
      st.story += "; no heir can take the job";
      return Final(st, 125, lo, hi + kCutOffExitS, {}, "lost");
    }
    // When a child of the root finds the root lost: a kill's closes at
    // once, unless its own link to the root was cut before (then its
    // silence, from the cut); a freeze's or a partition's silence.
    auto found_by = [&](int c, Event* fe) {
      const double cut = std::min(w_.cut_at[c], Split(w_, c, r));
      if (f.kind == FaultKind::kKill && cut > f.at_s) {
        RootFound(f, fe);
        return false;
      }
      Silence(std::min(cut, f.at_s), fe);
      return true;
    };
    Event hf;
    const bool silent = found_by(h, &hf);
    const double hlo = std::max(lo, hf.lo), hhi = std::max(hi, hf.hi);
    bool unsure = w_.dead_at[h] <= hhi + 2 * L_;  // the heir lost as it finds the root lost
    // Who reaches the heir, and by when each says its ranks ended.
    const double settle = hhi + 4 * L_ + o_.grace_s + 1;
    const double deadline = hhi + kMaxSilenceS + o_.grace_s + kEndingWaitS + 2 * L_;
    std::set<int> reach, relinked;
    double ready_lo = silent ? hlo + kMaxSilenceS + 1 : hlo;
    double ready_hi = silent ? hhi + kMaxSilenceS + 1 + 2 * L_ : hhi;
    std::function<void(int)> subtree = [&](int top) {
      reach.insert(top);
      for (int c : w_.kids[top]) {
        if (st.gone.count(c)) continue;
        const double gone = std::min(w_.dead_at[c], w_.cut_at[c]);
        if (gone < hlo) continue;
        if (gone < settle) unsure = true;
        subtree(c);
      }
    };
    subtree(h);
    for (int c : w_.kids[r]) {
      if (c == h || st.gone.count(c) || (!dies && !e.who.count(c))) continue;
      Event cf;
      const bool csilent = found_by(c, &cf);
      // (Its own link to the root is lost too: the one to the heir counts.)
      const double gone = std::min({w_.dead_at[c], Split(w_, c, h), w_.dead_at[h]});
      if (gone < cf.lo || cf.lo > deadline) continue;
      if (gone < cf.hi + 2 * L_ || cf.hi > deadline) unsure = true;
      // One that finds the root silent before the heir did stays in the
      // job below the heir until the heir finds the root lost too: it is
      // in the election (tree_links.cc).
      if (csilent) {
        ready_lo = std::max(ready_lo, cf.lo + kMaxSilenceS + 1);
        ready_hi = std::max(ready_hi, cf.hi + kMaxSilenceS + 1 + 2 * L_);
      }
      relinked.insert(c);
      subtree(c);
    }
    // Children that moved below a shim of the heir's side before (Moved):
    // their old link's cut no longer matters in the new root's tree either.
    for (int m : w_.relinked)
      if (reach.count(m) && w_.parent[m] != r) relinked.insert(m);
    for (int s : reach)
      if (w_.unfit_at[s] < settle && w_.unfit_at[s] >= hlo) unsure = true;
    const int reached = static_cast<int>(reach.size());
    // Every shim that counts reached it, or was found lost by a shim that
    // did (with those below it): the heir need not wait for the election's
    // deadline.
    ready_hi = std::max(ready_hi, settle);
    bool all = true;
    for (int s = 0; s < w_.n && all; ++s) {
      if (s == r || !w_.In(s) || st.gone.count(s) || reach.count(s)) continue;
      int q = s;
      while (w_.parent[q] >= 0 && w_.parent[q] != r && !reach.count(w_.parent[q]))
        q = w_.parent[q];
      const int p = w_.parent[q];
      if (p < 0 || p == r) {
        all = false;  // the heir waits for it until the deadline
        break;
      }
      Event found;
      const double t = std::min({w_.dead_at[q], w_.cut_at[q], Split(w_, q, p)});
      if (t == w_.dead_at[q] && w_.frozen_at[q] > t) {
        found.lo = t;
        found.hi = t + 2 * L_;
      } else {
        Silence(t, &found);
      }
      ready_lo = std::max(ready_lo, found.lo);
      ready_hi = std::max(ready_hi, found.hi + 2 * L_);
    }
    const double t_lo = all ? std::min(ready_lo, deadline)
                            : hlo + kMaxSilenceS + o_.grace_s + kEndingWaitS;
    const double t_hi = all ? std::min(ready_hi, deadline) : deadline;
    // (Faults on the shims that reached it, during the election: the
    // oracle does not order them.)
    for (const Fault& g : p_.faults)
      if (&g != &f && g.at_s > f.at_s && g.at_s <= t_hi + L_ &&
          (reach.count(g.shim) || g.shim == Fault::kRoot || g.kind == FaultKind::kPartition))
        unsure = true;
    // A heir lost alive that the root renamed after the cut: the children
    // cut off with it may still hold the old one as the heir.
    const bool stale = st.heir_lost_lo >= 0 && f.at_s < st.heir_lost_hi + 2 * L_;
    if (stale) unsure = true;
    if (unsure) {
      // Faults on the shims it gathers while it gathers them: the heir may
      // take the job or not, any of them may be lost or retired on the
      // way; foreseen loosely (exit codes as wide as they come, the root).
      for (int root : {r, h})
        Loosely(st, f, stale ? -2 : root,
                "shim " + std::to_string(h) +
                    (root == h ? " takes the job" : " does not take the job") +
                    " (faults during its election: loosely)");
      return;
    }
    st.story += "; shim " + std::to_string(h) + " reached by " + std::to_string(reached) +
                " of " + std::to_string(w_.n);
    // (Unsure: the shims counted may be fewer, never more.)
    const bool majority = reached * 2 > w_.n;
    if (!majority || unsure) {
      // No majority: the heir's side ends (125). An old root alive (a
      // partition) goes on with its own view of the losses.
      State no = st;
      no.story += "; no majority at the heir";
      if (!dies) {
        TakeLoss(no, loss, lo, hi, false, h);
      } else {
        for (int s = 0; s < w_.n; ++s)
          if (s != r && !reach.count(s) && w_.In(s)) no.fixed[s] = OutsideBits(s);
        Final(no, 125, t_lo, t_hi, {}, "majority");
      }
    }
    if (!majority) return;
    // The takeover.
    st.story += "; shim " + std::to_string(h) + " takes the job at " + FormatNumber(t_lo, "%.2f") +
                "-" + FormatNumber(t_hi, "%.2f") + " s";
    // The attempt under way (decided since the last restart or not) ends
    // with the root's loss: the heir's record holds the attempts up to the
    // last restart.
    using Phase = State::Phase;
    if (st.phase == Phase::kRound || st.phase == Phase::kRoundBlocked) {
      if (!st.attempts.empty()) st.attempts.pop_back();
      if (!st.past.empty()) st.past.pop_back();
    }
    ForeseenAttempt a;
    a.code = 125;
    a.announced = true;
    st.attempts.push_back(a);
    const double duration = lo - st.t_lo;
    st.past.push_back({125, duration >= kProgressS || (!p_.quiet && st.t_hi + kFirstOutputS + L_ <=
                                                                        lo - kLastWordsS),
                       duration, lo - st.t_hi, hi - st.t_lo + 2 * L_});
    // The old root and every shim that did not reach the heir are retired.
    std::vector<int> parent(static_cast<size_t>(w_.n), World::kOutside);
    for (int s = 0; s < w_.n; ++s) {
      if (reach.count(s)) {
        parent[static_cast<size_t>(s)] = s == h ? -1 : relinked.count(s) ? h : w_.parent[s];
        continue;
      }
      if (!st.fixed.count(s))
        st.fixed[s] = s == r && dies ? static_cast<uint8_t>(kNoExit) : OutsideBits(s);
      if (st.gone.insert(s).second) Retire(&st, s);
    }
    for (int s : reach)
      if (w_.unfit_at[s] < lo) Retire(&st, s);
    st.replaced = true;
    st.streak_shim = -1;  // a loss breaks a node's streak
    st.streak = 0;
    st.lost_alive.clear();
    st.heir_lost_lo = st.heir_lost_hi = -1;
    st.nospare_lo = st.nospare_hi = -1;
    st.root = h;
    st.extra_halt = {-1, -1};
    if (!dies) st.extra_halt = {lo, hi};  // the old root may have halted its side first
    st.retired_maybe.clear();
    // The restart, after the back-off (kRestarted fills the places left).
    st.phase = Phase::kRound;
    st.round = Event{};
    st.round.kind = Kind::kRestarted;
    st.round.lo = t_lo + Backoff(st.past, true);
    st.round.hi = t_hi + Backoff(st.past) + 4 * L_;
    st.round_from = t_lo;
    st.pending = st.round;
    st.pending_same = false;
    st.pending_code = 125;
    st.now = t_lo;
    // The job goes on in the tree the heir holds.
    StepInTree(std::move(st), Facts(p_, o_, h, parent, relinked, lo, t_hi), t_hi);
  }

  // (--spares) Rank 0's verdict on a failed attempt: the streak of the node
  // whose ranks failed first alone (docs/control-plane.md, "Spares and
  // retirement"); --retire-after 2 in a row retires it.
  void Verdict(const State& st0, double lo, double hi) {
    if (st0.pending_loss) {
      State st = st0;
      st.streak_shim = -1;
      st.streak = 0;
      return EndAttempt(st, st.pending_attempt, 125, true, st.pending_duration, lo, hi);
    }
    const std::set<int>& who = st0.pending_attempt.ranks;
    std::vector<int> options;
    if (who.size() == 1 && st0.pending_others.empty()) {
      options.push_back(*who.begin());
    } else {
      options.push_back(-1);  // rank 0 heard two nodes fail
      options.insert(options.end(), who.begin(), who.end());
    }
    for (int alone : options) {
      State st = st0;
      if (alone < 0) {
        st.streak_shim = -1;
        st.streak = 0;
      } else {
        st.streak = st.streak_shim == alone ? st.streak + 1 : 1;
        st.streak_shim = alone;
      }
      if (alone >= 0 && st.streak >= FaultPlan::kRetireAfter) {
        st.story += "; shim " + std::to_string(alone) + " retired";
        Retire(&st, alone);
        st.replaced = true;
        st.streak_shim = -1;
        st.streak = 0;
        if (Vacant(st) > static_cast<int>(st.spare.size())) {
          if (Deferred(st, lo)) {
            // (After a heir lost alive the restart waits out its cut.)
            st.nospare_lo = st.heir_lost_lo + kMaxSilenceS + 1;
            st.nospare_hi = st.heir_lost_hi + kMaxSilenceS + 1 + 2 * L_;
          } else {
            ForeseenAttempt a = st.pending_attempt;
            a.announced = false;
            a.ranks = {alone};
            st.attempts.push_back(a);
            st.story += "; no spare left";
            Final(st, 125, lo, hi, {alone}, "nospare");
            continue;
          }
        }
      }
      EndAttempt(st, st.pending_attempt, 7, st.pending_progress, st.pending_duration, lo, hi);
    }
  }

  // The roll-call's culprit (docs/control-plane.md, "Naming the culprit"):
  // the shim whose first rank skipped the attempt's last collective
  // (FaultPlan::skip), when it runs ranks in this attempt, its record comes
  // (it is no roll-call's silent shim, and answers its pipe), and another
  // shim's ranks surely entered the collective; else none (-1). Each way
  // where the roll-call may or may not hear from it.
  std::set<int> Culprits(const State& st) const {
    const int s = p_.skip;
    if (!p_.quiet || s < 0 || s >= w_.n || !Runs(st, s) || st.gone.count(s) ||
        st.missing_min.count(s) || p_.nodump == s)
      return {-1};
    bool other = false;  // a rank that entered it, surely heard
    for (int t = 0; t < w_.n && !other; ++t)
      other = t != s && Runs(st, t) && !st.gone.count(t) && !st.missing_max.count(t) &&
              p_.nodump != t;
    if (!other) return {-1, s};
    if (st.missing_max.count(s)) return {-1, s};
    return {s};
  }

  // (--spares) A hang whose culprit is one node's counts as that node's
  // failure for the streak; any other hang breaks the streak. False when
  // the node is retired and no spare is left: the job ends (125).
  bool NoteCulprit(State* st, int culprit, const ForeseenAttempt& hang, double lo, double hi) {
    if (!spares_ || culprit < 0) {
      st->streak_shim = -1;
      st->streak = 0;
      return true;
    }
    st->streak = st->streak_shim == culprit ? st->streak + 1 : 1;
    st->streak_shim = culprit;
    if (st->streak < FaultPlan::kRetireAfter) return true;
    st->story += "; shim " + std::to_string(culprit) + " retired (the hang's culprit)";
    Retire(st, culprit);
    st->replaced = true;
    st->streak_shim = -1;
    st->streak = 0;
    if (Vacant(*st) <= static_cast<int>(st->spare.size())) return true;
    if (Deferred(*st, lo)) {
      st->nospare_lo = st->heir_lost_lo + kMaxSilenceS + 1;
      st->nospare_hi = st->heir_lost_hi + kMaxSilenceS + 1 + 2 * L_;
      return true;
    }
    ForeseenAttempt a = hang;
    a.announced = false;
    st->attempts.push_back(a);
    st->story += "; no spare left";
    Final(*st, 125, lo, hi, {culprit}, "nospare");
    return false;
  }

  // The job's last verdict: `code` at rank 0, decided in [lo, hi]; each
  // shim's own exit follows from what reaches it first.
  void Final(const State& st, int code, double lo, double hi, const std::set<int>& lost,
             const std::string& refused) {
    Foreseen f;
    f.story = st.story;
    f.code = code;
    f.restarts = st.restarts;
    f.refused = refused;
    f.refused_also = refused_also_;
    f.lost = lost;
    for (size_t i = 1; i < st.rosters.size(); ++i) f.rosters.push_back(st.rosters[i].second);
    f.retired = st.retired;
    f.retired_max = st.retired;
    f.retired_max.insert(st.retired_maybe.begin(), st.retired_maybe.end());
    // A cut's silent children of the root are found one by one (the root
    // awaits each below its heir, MoveWaitS, from its own last beat): a
    // verdict that came before the last could be found names only those
    // found by then.
    for (const Event& l : st.losses)
      if (l.who.size() > 1 && l.hi >= lo)
        for (int c : l.who)
          if (MoveWaitS(c) > 0) f.retired.erase(c);
    // A stop during a restart round: a node unfit by then may have said
    // so, and been retired, as its ranks ended.
    // So may a "no spare left" after a cut: the root awaits its silent
    // children under the heir (MoveWaitS) while the losses found at once
    // (deeper in the tree, or closed) begin the round that checks the nodes.
    if (st.phase == State::Phase::kRound || st.phase == State::Phase::kRoundBlocked ||
        (refused == "nospare" && spares_ && w_.n >= 3))
      for (int s = 0; s < w_.n; ++s)
        if (w_.unfit_at[s] <= hi) f.retired_max.insert(s);
    f.decided_lo = lo;
    f.decided_hi = hi;
    f.root = st.root;
    f.loose = st.loose;
    f.no_record = st.no_record;
    f.halts = st.halts;
    f.extra_halt = st.extra_halt;
    f.restart_times = st.restart_times;
    f.ended = st.attempts;
    if (code != 0 && code != 143 && p_.max_restarts > 0) f.attempts = st.attempts;
    if (code == 124) {
      f.missing_min = st.missing_min;
      f.missing_max = st.missing_max;
      f.culprit = st.culprit;
    }
    // The current attempt's healthy end, where its ranks end with 0.
    const double end_lo = p_.quiet || st.phase != State::Phase::kRunning ? kInf : st.t_lo + p_.run_s;
    const double end_hi = end_lo + (st.t_hi - st.t_lo);
    const uint8_t c = code < 0 ? 0 : ExitBitOf(code);
    f.codes.assign(w_.n, 0);
    for (int s = 0; s < w_.n; ++s) {
      // What may reach this shim first, each in a window: the verdict, its
      // own signal, its cut from rank 0, or its part's end.
      struct Way {
        double lo, hi;
        uint8_t bits;
      };
      std::vector<Way> ways;
      if (code >= 0) ways.push_back({lo, hi + L_, c});
      // Its own signal: 143 (137 when its ranks ignore SIGTERM and
      // SIGKILL ends them: the supervisor gives the status of the rank that
      // ended first after it), or its own rank's failure when one failed
      // before it (and was not restarted since), or 0 when its ranks had
      // all ended well.
      uint8_t own_signal = 0;
      if (w_.signal_at[s] < kInf) {
        const double sig = w_.signal_at[s];
        own_signal = kExit143;
        if (w_.stubborn[s]) own_signal = s == st.signalled_running ? kExit137 : kExit143 | kExit137;
        bool failed_before = w_.fails[s] && w_.first_fail[s] <= sig + L_;
        if (w_.fails[s] && !p_.restarts_succeed)
          for (size_t k = 1; k < st.starts.size(); ++k)
            if (st.starts[k] + FaultPlan::kRefailS <= sig + L_) failed_before = true;
        // Or one that failed by itself before SIGTERM (or, ignoring it,
        // SIGKILL) ended it: the rank that ended first after the signal.
        const double ends_by = sig + (w_.stubborn[s] ? o_.grace_s : o_.term_s) + L_;
        const double fails_at = st.starts.size() == 1 ? w_.first_fail[s]
                                : p_.restarts_succeed ? kInf
                                                      : st.starts.back() + FaultPlan::kRefailS;
        if (w_.fails[s] && fails_at <= ends_by) failed_before = true;
        if (failed_before) own_signal |= kExit7;
        if (!p_.quiet && st.starts.back() + p_.run_s <= sig + L_) own_signal |= kExit0;
        // No ranks here when the signal came: stopped, not done.
        if (spares_) {
          bool ran = false, idle = false;
          for (double at : {sig - L_, sig + L_}) {
            const std::vector<int>* h = &st.rosters.front().second;
            for (const auto& r : st.rosters)
              if (r.first <= at) h = &r.second;
            (std::find(h->begin(), h->end(), s) != h->end() ? ran : idle) = true;
          }
          if (!ran) own_signal = kExit143;
          else if (idle) own_signal |= kExit143;
        }
        ways.push_back({sig, sig, own_signal});
      }
      if (s != w_.root && w_.cutoff[s] < kInf) {
        uint8_t cut = kExit125;
        // Its own failure, when its rank failed in this attempt and no
        // verdict reached it; its part's end, when that came first; a
        // signal within its side (its own, before it finds itself cut off).
        // (A failing shim waits for its verdict while restarts remain.)
        int seen = -1;
        for (double t0 : st.starts)
          if (t0 <= w_.cutoff[s] + L_) ++seen;
        if (w_.fails[s] && code != 0 && seen >= p_.max_restarts) cut |= kExit7;
        // Or the stop of a failing shim above it on its side, which heard no
        // verdict either and had no restart left.
        for (int a = w_.parent[s]; a >= 0 && a != w_.root; a = w_.parent[a])
          if (w_.fails[a] && Runs(st, a) && code != 0 && seen >= p_.max_restarts) cut |= kExit7;
        // (It runs on in the attempt it was cut off in.)
        double own_end = kInf;
        for (double t0 : st.starts)
          if (t0 <= w_.cutoff[s] && !p_.quiet) own_end = t0 + p_.run_s;
        // (With spares no shim is done before the job's finish.)
        if (own_end < w_.cutoff[s] + kCutOffExitS && !spares_) cut |= kExit0;
        if (w_.any_signal) cut |= kExit143;
        if (w_.signal_at[s] < w_.cutoff[s] + kCutOffExitS) cut |= own_signal;
        if (code == 124 || st.pending_code == 124) cut |= kExit124;
        ways.push_back({w_.cutoff[s], w_.cutoff[s], cut});
      }
      const double leave_hi = end_hi + w_.drain_s + L_ * (w_.height[s] + 2);
      if (spares_) {
        // No shim leaves before the finish: the verdict's way above.
      } else if (end_lo < kInf && Whole(s, end_hi + L_ * (w_.height[s] + 1)))
        ways.push_back({end_lo, leave_hi, kExit0});
      else if (end_lo < kInf && code == 0)
        ways.push_back({end_lo, leave_hi, kExit0 | kExit125 | kExit143});
      double min_hi = kInf;
      for (const Way& way : ways) min_hi = std::min(min_hi, way.hi);
      uint8_t bits = 0;
      double first_lo = kInf;
      for (const Way& way : ways)
        if (way.lo <= min_hi) {
          bits |= way.bits;
          first_lo = std::min(first_lo, way.lo);
        }
      if (ways.empty() || code < 0) bits |= kNoExit;  // nothing reaches it: it waits
      // Frozen or killed before it could exit: it never does.
      if (w_.dead_at[s] < kInf) {
        if (w_.dead_at[s] < first_lo) bits = kNoExit;
        else bits |= kNoExit;
      }
      // It left the tree at a takeover: what it ended with then.
      if (auto it = st.fixed.find(s); it != st.fixed.end()) bits = it->second;
      f.codes[s] = bits;
    }
    // The root's verdict may never reach its heir: a partition that parts
    // them came before the verdict crossed (the root cannot know it yet,
    // the cut's silence is found seconds later). The heir's side, finding
    // the root silent, holds an election and may take the job (aml-plane-
    // sim, seed 940651079: "no spare left" 2 s into a cut). These rules do
    // not order what the heir's side does then: its shims may end in any
    // way, and any shim may hold the job.
    if (const std::set<int> side = HeirSideUnreached(st, hi); !side.empty()) {
      Foreseen loose = f;
      loose.root = -2;
      loose.loose = true;
      loose.story += "; the verdict never reaches the heir's side of a cut, which may take the job";
      // (A kill or freeze of the root there hits the heir's root: any of them.)
      bool later_loss = false;
      for (const Fault& pf : p_.faults)
        if ((pf.kind == FaultKind::kKill || pf.kind == FaultKind::kFreeze) && pf.at_s >= lo)
          later_loss = true;
      for (int s : side)
        loose.codes[s] |= kExit0 | kExit7 | kExit124 | kExit125 | kExit137 | kExit143 |
                          (later_loss ? kNoExit : 0);
      out_.push_back(std::move(loose));
    }
    out_.push_back(std::move(f));
  }

  // The shims of a heir's side of a partition that parts it from the root
  // before a verdict given by `hi` crossed (empty: none).
  std::set<int> HeirSideUnreached(const State& st, double hi) const {
    std::set<int> side;
    if (!spares_ || w_.n < 3 || st.loose) return side;
    for (size_t i = 0; i < statics_.size(); ++i) {
      const Event& e = statics_[i];
      if (e.kind != Kind::kRootLost || st.dropped.count(static_cast<int>(i)) || e.fault < 0)
        continue;
      const Fault& f = p_.faults[static_cast<size_t>(e.fault)];
      if ((f.kind != FaultKind::kPartition && f.kind != FaultKind::kCut) || f.at_s >= hi + L_)
        continue;
      for (int c : e.who) {
        if (w_.parent[c] != w_.root || st.gone.count(c) || w_.dead_at[c] <= e.hi) continue;
        side.insert(c);
        for (int b : Below(c)) side.insert(b);
      }
    }
    return side;
  }

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

}  // namespace

uint8_t ExitBitOf(int code) {
  switch (code) {
    case 0: return kExit0;
    case 7: return kExit7;
    case 124: return kExit124;
    case 125: return kExit125;
    case 137: return kExit137;
    case 143: return kExit143;
    default: return 0;
  }
}

std::string ExitBitsText(uint8_t bits) {
  std::string out;
  const std::pair<uint8_t, const char*> names[] = {{kExit0, "0"},     {kExit7, "7"},
                                                   {kExit124, "124"}, {kExit125, "125"},
                                                   {kExit137, "137"}, {kExit143, "143"},
                                                   {kNoExit, "no exit"}};
  for (const auto& [bit, name] : names)
    if (bits & bit) out += (out.empty() ? "" : "|") + std::string(name);
  return out.empty() ? "nothing" : out;
}

std::vector<Foreseen> Foresee(const FaultPlan& plan, const OracleSetup& setup) {
  return Seer(plan, setup).Run();
}

std::vector<double> ReachableUntil(const FaultPlan& plan, const OracleSetup& setup) {
  const World w = Facts(plan, setup);
  std::vector<double> out(w.n);
  for (int s = 0; s < w.n; ++s) out[s] = std::min(w.cutoff[s], w.dead_at[s]);
  return out;
}

}  // namespace aml
