// The oracle's walk (oracle_seer.h): the plan's losses and signals, each
// attempt's own events, the next decisive event of each branch, the back-off.
#include "shim/sim/oracle_seer.h"

namespace aml {
namespace seer {

void Seer::BuildStatics(double from) {
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
        // Cut off by its (or its ancestor's) own link to the root: with
        // spares, that child links to the heir and stays in the job below
        // it, its subtree with it, and the bye goes up through the heir
        // (aml-plane-sim, seed 614217).
        int c = s;
        while (w_.parent[c] != root) c = w_.parent[c];
        const bool moves = spares_ && w_.cut_at[c] <= w_.cutoff[s];
        if (moves) e.hi += 2 * L_;
        if (w_.cutoff[s] < e.lo - L_ && !moves) continue;  // its bye never reaches the root
        e.maybe = true;
      }
      statics_.push_back(e);
    }
  }
}

std::vector<Foreseen> Seer::Run() {
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

double Seer::RecordsWait(const State& st, double hi) const {
  if (o_.hang_s <= 0 || w_.n == 1) return 0;
  bool all = p_.nodump < 0;
  for (int s = 0; s < w_.n && all; ++s)
    if (w_.In(s) && !st.gone.count(s) &&
        std::min(w_.dead_at[s], w_.cutoff[s]) < hi + kDumpS + 4 * L_)
      all = false;
  return all ? kDumpS + 2 * L_ : kDumpTimeoutS + kRecordsWaitS;
}

void Seer::Decide(State* st, double lo, double hi, const ForeseenAttempt& a, double duration,
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

std::vector<int> Seer::Below(int s) const {
  std::vector<int> out = {s};
  for (size_t i = 0; i < out.size(); ++i)
    for (int c : w_.kids[out[i]]) out.push_back(c);
  out.erase(out.begin());
  return out;
}

bool Seer::Retire(State* st, int s) {
  st->retired.insert(s);
  st->spare.erase(std::remove(st->spare.begin(), st->spare.end(), s), st->spare.end());
  for (int& h : st->holder)
    if (h == s) {
      h = -1;
      return true;
    }
  return false;
}

double Seer::FoundBy(int s) const {
  const double t = Unreachable(s);
  if (t >= kInf) return kInf;
  return std::max(t + kSteadySilenceS, o_.startup_s) + 2 * L_ + BusySilenceS() + MoveWaitS(s);
}

void Seer::AttemptEvents(const State& st, std::vector<Event>* ev) const {
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

void Seer::Step(State st) {
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

double Seer::Backoff(const std::vector<State::Past>& past, bool longest) {
  int short_run = 0;
  for (auto it = past.rbegin();
       it != past.rend() && (longest ? it->longest : it->shortest) < kProgressS; ++it)
    ++short_run;
  if (short_run < 2) return 0;
  double d = 1;
  for (int i = 2; i < short_run; ++i) d = std::min(2 * d, kMaxBackoffS);
  return d;
}

}  // namespace seer
}  // namespace aml
