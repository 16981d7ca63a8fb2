#include "shim/sim/oracle.h"

#include <algorithm>
#include <functional>

#include "shim/base/units.h"
#include "shim/control/liveness.h"

namespace aml {
namespace {

// The documented rules (docs/control-plane.md), written here on their own.
constexpr double kInf = 1e18;
constexpr double kWindowS = 0.1;      // rank 0 names the earliest failure of this window
constexpr double kSteadySilenceS = 5; // a steady link is lost after this much silence
constexpr double kCollectS = 20;      // the roll-call waits this long for stacks
constexpr double kEndingWaitS = 30;   // past --grace, for every shim to end its ranks
constexpr double kProgressS = 60;     // an attempt this long made progress
constexpr double kLastWordsS = 1;     // output in a failure's last second is not progress
constexpr double kMaxBackoffS = 30;
constexpr double kFirstOutputS = 0.5; // the simulated ranks print this long after start
constexpr double kCutOffExitS = 31;   // a shim cut off knows it within 30 s (and a beat)

// Facts of the plan, per shim.
struct World {
  int n = 0;
  std::vector<int> parent;
  std::vector<std::vector<int>> kids;
  std::vector<int> height;        // levels below it
  std::vector<double> dead_at;    // frozen or killed
  std::vector<double> cut_at;     // the link to its parent stops carrying frames
  std::vector<double> cutoff;     // its path to rank 0 breaks (a death or a cut above it)
  std::vector<double> inner;      // the first death or cut strictly below it
  std::vector<double> signal_at;  // its launcher's SIGTERM
  std::vector<double> first_fail; // its rank's failure in the first attempt
  std::vector<double> unfit_at;   // (--spares) its node fails its check before an attempt from then on
  std::vector<bool> fails;        // it has a failing rank (it fails again in later attempts)
  std::vector<bool> stubborn;
  // What ranks that ended well leave behind is ended after them: SIGTERM,
  // then SIGKILL after min(--grace, 2 s) when it ignores SIGTERM.
  double drain_s = 0;
  bool any_signal = false;
  int max_depth = 0;
};

World Facts(const FaultPlan& p, const OracleSetup& o) {
  World w;
  w.n = static_cast<int>(o.parent.size());
  w.parent = o.parent;
  w.kids.resize(w.n);
  w.height.assign(w.n, 0);
  w.dead_at.assign(w.n, kInf);
  w.cut_at.assign(w.n, kInf);
  w.cutoff.assign(w.n, kInf);
  w.inner.assign(w.n, kInf);
  w.signal_at.assign(w.n, kInf);
  w.first_fail.assign(w.n, kInf);
  w.unfit_at.assign(w.n, kInf);
  w.fails.assign(w.n, false);
  w.stubborn.assign(w.n, false);
  for (int s = 1; s < w.n; ++s) w.kids[w.parent[s]].push_back(s);
  std::vector<int> stragglers;
  for (const Fault& f : p.faults) {
    switch (f.kind) {
      case FaultKind::kFreeze:
      case FaultKind::kKill:
        w.dead_at[f.shim] = std::min(w.dead_at[f.shim], f.at_s);
        break;
      case FaultKind::kCut:
        w.cut_at[f.shim] = std::min(w.cut_at[f.shim], f.at_s);
        break;
      case FaultKind::kPartition: {
        std::vector<bool> in(w.n, false);
        for (int s : f.group) in[s] = true;
        for (int s = 1; s < w.n; ++s)
          if (in[s] != in[w.parent[s]]) w.cut_at[s] = std::min(w.cut_at[s], f.at_s);
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
  // Parents come before their children (the planner hangs a shim under one
  // that joined earlier): one pass down, one up.
  std::vector<int> order, depth(w.n, 0);
  order.push_back(0);
  for (size_t i = 0; i < order.size(); ++i)
    for (int c : w.kids[order[i]]) {
      order.push_back(c);
      depth[c] = depth[order[i]] + 1;
      w.max_depth = std::max(w.max_depth, depth[c]);
    }
  for (int s : order)
    if (s != 0)
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

enum class Kind {
  kFail, kLoss, kSignal, kHang, kEnd, kEndingTimeout, kVerdict, kCollected, kRestarted
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
  }
  return "?";
}

struct Event {
  Kind kind = Kind::kFail;
  double lo = 0, hi = 0;  // when rank 0 acts on it
  double t = 0;           // when it happened (a failure's wall clock)
  std::set<int> who;      // its shims (a failure's ranks, a loss's lost shims)
  bool maybe = false;     // it may not reach rank 0 at all
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
  std::vector<std::pair<double, double>> halts, restart_times;
};

class Seer {
 public:
  Seer(const FaultPlan& p, const OracleSetup& o) : p_(p), o_(o), w_(Facts(p, o)) {
    L_ = o.slack_s;
    spares_ = p.spares > 0 && w_.n > 1;
    for (const Fault& f : p.faults) {
      const int s = f.shim;
      if (f.kind == FaultKind::kKill || f.kind == FaultKind::kFreeze || f.kind == FaultKind::kCut) {
        if (s <= 0) continue;  // rank 0's own loss: RootLoss's
        Event e;
        e.kind = Kind::kLoss;
        e.t = f.at_s;
        e.who = {s};
        if (f.kind == FaultKind::kKill && w_.cut_at[s] > f.at_s) {
          e.lo = f.at_s;  // its links close: found at once
          e.hi = f.at_s + 2 * L_;
        } else {  // (a kill behind a cut closes nothing that arrives)
          Silence(f.at_s, &e);
        }
        // Found by its parent, which must still reach rank 0.
        if (w_.cutoff[w_.parent[s]] < e.lo || w_.dead_at[w_.parent[s]] < e.lo) continue;
        e.maybe = w_.cutoff[w_.parent[s]] < e.hi || w_.dead_at[w_.parent[s]] < e.hi;
        statics_.push_back(e);
      } else if (f.kind == FaultKind::kPartition) {
        Event e;
        e.kind = Kind::kLoss;
        e.t = f.at_s;
        Silence(f.at_s, &e);
        std::vector<bool> in(w_.n, false);
        for (int g : f.group) in[g] = true;
        for (int c = 1; c < w_.n; ++c)
          if (in[c] && !in[w_.parent[c]] && w_.cutoff[w_.parent[c]] >= e.lo) e.who.insert(c);
        if (!e.who.empty()) statics_.push_back(e);
      } else if (f.kind == FaultKind::kSigterm) {
        if (w_.dead_at[s] <= f.at_s) continue;  // a frozen shim takes no signal
        Event e;
        e.kind = Kind::kSignal;
        e.t = f.at_s;
        e.lo = f.at_s;
        e.hi = f.at_s + 2 * L_;
        e.who = {s};
        if (s != 0 && w_.cutoff[s] < e.hi) {
          if (w_.cutoff[s] < e.lo - L_) continue;  // its bye never reaches rank 0
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
  // frame came up to a beat before the fault. Rank 0 hears of it from the
  // shim that found it, within the tree's latency.
  void Silence(double t, Event* e) const {
    e->lo = std::max(t - o_.beat_s + kSteadySilenceS, o_.startup_s) - 0.01;
    e->hi = std::max(t + kSteadySilenceS, o_.startup_s) + 2 * L_;
  }

  bool Whole(int s, double by) const { return w_.inner[s] > by; }
  // Rank 0 alone decides at once.
  double Window() const { return w_.n == 1 ? 0 : kWindowS; }

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
  // The latest moment the loss of an unreachable shim is found.
  double FoundBy(int s) const {
    const double t = Unreachable(s);
    if (t >= kInf) return kInf;
    return std::max(t + kSteadySilenceS, o_.startup_s) + 2 * L_;
  }

  // The attempt's own events at rank 0: its first failure, its hang, or
  // its healthy end.
  void AttemptEvents(const State& st, std::vector<Event>* ev) const {
    if (!p_.quiet) {
      Event e;
      e.kind = Kind::kEnd;
      e.lo = st.t_lo + p_.run_s;
      e.hi = st.t_hi + p_.run_s + w_.drain_s + L_ * (w_.height[0] + 2);
      // Every part of the job must be there to end well (a shim lost before
      // leaves its ancestors waiting for the loss's verdict).
      if (!spares_) {
        if (Whole(0, e.lo - L_)) ev->push_back(e);
      } else {
        // With spares: every NODE_RANK's ranks must say they ended well; a
        // lost spare is only found (and its parent freed) later.
        bool whole = true;
        for (int h : st.holder)
          if (h < 0 || Unreachable(h) < e.lo - L_) whole = false;
        for (int s = 1; s < w_.n && whole; ++s)
          if (!st.gone.count(s) && Unreachable(s) < e.hi)
            e.hi = std::max(e.hi, FoundBy(s) + L_ * (w_.height[0] + 2));
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
      if (!w_.fails[s] || !Runs(st, s)) continue;
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
      if (s != 0 && w_.cutoff[s] < e.hi) {
        if (w_.cutoff[s] < lo - L_) continue;  // its word never reaches rank 0
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
      const bool tie = st.attempt == 1 ? fails[i].lo <= first.lo + 1e-9 : fails[i].lo <= first.hi;
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
    double min_hi = kInf;
    for (const Event& e : ev)
      if (!e.maybe) min_hi = std::min(min_hi, e.hi);
    bool any = false;
    for (const Event& e : ev) {
      if (e.lo > min_hi) continue;
      any = true;
      const double hi = std::min(e.hi, min_hi);
      Take(st, e, e.lo, std::max(hi, e.lo));
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
  static double Backoff(const std::vector<State::Past>& past) {
    int short_run = 0;
    for (auto it = past.rbegin(); it != past.rend() && it->duration < kProgressS; ++it)
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
      case Kind::kSignal:
        return Final(st, 143, lo, hi, {}, "");
      case Kind::kLoss:
        if (spares_) return TakeLoss(st, e, lo, hi);
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
          for (int s = 1; s < w_.n; ++s) {
            const double gone = std::min(w_.dead_at[s], w_.cutoff[s]);
            if (gone < lo - L_) mmin.insert(s);
            if (gone < hi + L_) mmax.insert(s);
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
          st.pending.lo = !wait_min ? lo : lo + kCollectS;
          st.pending.hi = (!wait_max ? hi : hi + kCollectS) + 2 * L_;
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
        st.streak_shim = -1;  // a hang breaks a node's streak
        st.streak = 0;
        EndAttempt(st, a, 124, true, hi - st.t_lo, lo, hi);
        return;
      }
      case Kind::kRestarted: {
        // (--spares) Each node whose check failed as its ranks ended (it
        // was unfit before the round began) is retired: a spare takes its
        // place, or the job ends when none is left.
        if (spares_) {
          bool unfit = false;
          for (int s = 0; s < w_.n; ++s)
            if (w_.unfit_at[s] <= st.round_from && !st.gone.count(s) && !st.retired.count(s)) {
              Retire(&st, s);
              unfit = true;
            }
          if (unfit) st.pending_same = false;
          if (Vacant(st) > static_cast<int>(st.spare.size())) {
            st.story += "; a node unfit, no spare left";
            return Final(st, 125, st.round_from, hi, {}, "nospare");
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
    st.past.push_back({code, progress, duration});
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
    const double backoff = same ? 0 : Backoff(st.past);
    st.now = lo;
    st.round = Event{};
    st.round.kind = Kind::kRestarted;
    st.round.lo = lo + backoff;
    st.round.hi = hi + end_s + backoff + 4 * L_;
    st.round_from = lo;
    st.pending_same = same;
    st.pending_code = code;
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

  // (--spares) A loss rank 0 hears: the lost shims and every shim below
  // them are retired. A spare's loss is only noted; a NODE_RANK's holder's
  // ends the attempt as a failure (a halt, then the verdict after the
  // window), unless no spare is left for it: the job ends with 125.
  void TakeLoss(State st, const Event& e, double lo, double hi) {
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
    using Phase = State::Phase;
    // More than half of the shims lost (docs/control-plane.md, "A new
    // root"): rank 0 ends its part, as when no spare is left.
    const bool majority = w_.n >= 3 && static_cast<int>(st.gone.size()) * 2 > w_.n;
    if (majority || Vacant(st) > static_cast<int>(st.spare.size())) {
      // Rank 0 hears the losses of one moment one by one (this one, those
      // taken just before, those due now) and stops at the first it has no
      // spare for: it may name any of them, any of them may be retired by
      // then, and a first one that left a spare may have halted the ranks.
      std::set<int> named = e.who;
      for (const Event& l : st.losses)
        if (l.hi >= lo) named.insert(l.who.begin(), l.who.end());
      for (size_t i = 0; i < statics_.size(); ++i)
        if (statics_[i].kind == Kind::kLoss && !st.dropped.count(static_cast<int>(i)) &&
            statics_[i].lo <= hi)
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
      const bool could_nospare = vacant > spares_left;
      st.story += majority ? "; no majority" : "; no spare left";
      refused_also_.clear();
      if (could_majority) refused_also_.insert("majority");
      if (could_nospare) refused_also_.insert("nospare");
      Final(st, 125, lo, hi, named, majority ? "majority" : "nospare");
      refused_also_.clear();
      if (could_majority && o_.heir > 0 && w_.dead_at[o_.heir] >= kInf) {
        // The heir, on the other side, may take the job with more than
        // half of the shims (RootLoss foresees it exactly alone in its
        // plan; beside other faults, any end but rank 0's own).
        Foreseen f = out_.back();
        f.story += "; or shim " + std::to_string(o_.heir) + " takes the job";
        f.takeover = f.loose = true;
        for (int s = 1; s < w_.n; ++s)
          f.codes[s] |= kExit0 | kExit7 | kExit124 | kExit125 | kExit137 | kExit143 | kNoExit;
        out_.push_back(std::move(f));
      }
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
        bool waits = false;
        for (int s : st.pending_missing_min)
          if (!st.gone.count(s)) waits = true;
        if (!waits) st.pending.lo = std::min(st.pending.lo, std::max(lo, st.now));
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
        return Step(st);
      }
      default:
        return Step(st);
    }
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
          ForeseenAttempt a = st.pending_attempt;
          a.announced = false;
          a.ranks = {alone};
          st.attempts.push_back(a);
          st.story += "; no spare left";
          Final(st, 125, lo, hi, {alone}, "nospare");
          continue;
        }
      }
      EndAttempt(st, st.pending_attempt, 7, st.pending_progress, st.pending_duration, lo, hi);
    }
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
    f.decided_lo = lo;
    f.decided_hi = hi;
    f.halts = st.halts;
    f.extra_halt = st.extra_halt;
    f.restart_times = st.restart_times;
    f.ended = st.attempts;
    if (code != 0 && code != 143 && p_.max_restarts > 0) f.attempts = st.attempts;
    if (code == 124) {
      f.missing_min = st.missing_min;
      f.missing_max = st.missing_max;
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
        if (w_.stubborn[s]) own_signal |= kExit137;
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
      if (s != 0 && w_.cutoff[s] < kInf) {
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
        for (int a = w_.parent[s]; a > 0; a = w_.parent[a])
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
      f.codes[s] = bits;
    }
    out_.push_back(std::move(f));
  }

  const FaultPlan& p_;
  const OracleSetup& o_;
  World w_;
  double L_ = 0.25;
  std::vector<Event> statics_;  // losses and signals: at fixed times
  bool spares_ = false;
  std::set<std::string> refused_also_;  // (Final) other reasons as good as `refused`
  std::vector<Foreseen> out_;
  int steps_ = 0;
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

// --spares, rank 0's shim lost (docs/control-plane.md, "A new root"): a
// plan whose one fault kills or freezes rank 0's shim, or cuts it off
// from more than half of the shims. The root's heir (its first child) takes
// the job when it is on the other side and more than half of the shims
// reach it: the shims that do (H) end their ranks, the root's node and every
// shim not in H are retired, a spare takes each NODE_RANK left empty, and
// the next attempt (which ends well) ends the job with 0 on every shim of H.
// The rest: the old root alive loses more than half and ends its part
// (125), a shim cut off from both ends its own (125). Empty when the plan
// is not such a plan or the heir cannot take the job (then the rules of
// Seer hold: the old root, cut off from more than half, ends its part).
static std::vector<Foreseen> RootLoss(const FaultPlan& p, const OracleSetup& o) {
  const World w = Facts(p, o);
  if (p.spares <= 0 || p.faults.size() != 1 || w.n < 3 || p.quiet || p.max_restarts < 1 ||
      o.heir <= 0)
    return {};
  const Fault& f = p.faults[0];
  const bool dies = (f.kind == FaultKind::kKill || f.kind == FaultKind::kFreeze) && f.shim == 0;
  std::set<int> H;
  if (dies) {
    for (int s = 1; s < w.n; ++s) H.insert(s);
  } else if (f.kind == FaultKind::kPartition) {
    int cut = 0;
    for (int s = 1; s < w.n; ++s)
      if (w.cutoff[s] < kInf) ++cut;
    if (cut * 2 <= w.n) return {};  // rank 0 keeps the job
    std::vector<bool> in(w.n, false);
    for (int g : f.group) in[g] = true;
    if (!in[o.heir]) return {};
    for (int s = 1; s < w.n; ++s) {
      bool whole = in[s];
      for (int a = w.parent[s]; whole && a > 0; a = w.parent[a]) whole = in[a];
      if (whole) H.insert(s);
    }
  } else {
    return {};
  }
  if (static_cast<int>(H.size()) * 2 <= w.n) return {};
  Foreseen out;
  const double t = f.at_s;
  out.story = std::string(FaultKindName(f.kind)) + "@" + FormatNumber(t, "%.3f") +
              ": rank 0's shim lost; shim " + std::to_string(o.heir) + " takes the job with " +
              std::to_string(H.size()) + " of " + std::to_string(w.n) + " shims";
  // Each NODE_RANK of a shim not in H to a spare in H, lowest first.
  const int nodes = w.n - p.spares;
  std::vector<int> holders, spares;
  for (int s = nodes; s < w.n; ++s)
    if (H.count(s)) spares.push_back(s);
  size_t next = 0;
  bool filled = true;
  for (int n = 0; n < nodes; ++n) {
    if (H.count(n)) {
      holders.push_back(n);
    } else if (next < spares.size()) {
      holders.push_back(spares[next++]);
    } else {
      filled = false;
    }
  }
  out.decided_lo = t;
  out.decided_hi = t + 400;
  if (f.kind == FaultKind::kPartition) out.extra_halt = {t, t + kMaxSilenceS + 2};
  ForeseenAttempt lost;
  lost.code = 125;
  out.ended.push_back(lost);
  for (int s = 0; s < w.n; ++s)
    if (!H.count(s)) out.retired.insert(s);
  out.retired_max = out.retired;
  out.takeover = true;
  if (filled) {
    out.code = 0;
    out.restarts = 1;
    out.rosters.push_back(holders);
    out.restart_times.emplace_back(t, t + 2 * kMaxSilenceS + o.grace_s + 30 + 10);
    out.story += "; restart 1 with a spare";
  } else {
    out.code = 125;
    out.refused = "nospare";
    out.attempts.push_back(lost);
    out.story += "; no spare left";
  }
  out.codes.assign(w.n, kExit125);
  for (int s : H) out.codes[s] = filled ? kExit0 : kExit125;
  if (dies) out.codes[0] = kNoExit;
  return {out};
}

std::vector<Foreseen> Foresee(const FaultPlan& plan, const OracleSetup& setup) {
  if (std::vector<Foreseen> r = RootLoss(plan, setup); !r.empty()) return r;
  return Seer(plan, setup).Run();
}

std::vector<double> ReachableUntil(const FaultPlan& plan, const OracleSetup& setup) {
  const World w = Facts(plan, setup);
  std::vector<double> out(w.n);
  for (int s = 0; s < w.n; ++s) out[s] = std::min(w.cutoff[s], w.dead_at[s]);
  return out;
}

}  // namespace aml
