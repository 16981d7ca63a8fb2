// The oracle's rules for an attempt's end (oracle_seer.h): the restart rule,
// the roll-call's culprit, the job's last verdict and each shim's exit.
#include "shim/sim/oracle_seer.h"

namespace aml {
namespace seer {

void Seer::EndAttempt(State st, ForeseenAttempt a, int code, bool progress, double duration,
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
    std::vector<int> maybe;  // heard only if its path to the root holds long enough
    for (int s = 0; s < w_.n; ++s) {
      if (w_.unfit_at[s] > lo || !w_.In(s) || unfit.gone.count(s) || unfit.retired.count(s))
        continue;
      if (w_.dead_at[s] > hi && w_.cutoff[s] > hi) {
        Retire(&unfit, s);
        any = true;
      } else if (w_.dead_at[s] > lo && w_.cutoff[s] > lo) {
        maybe.push_back(s);
      }
    }
    // One whose path breaks within the window (the root itself lost then)
    // may be heard first: no spare left for it ends the job there too
    // (aml-plane-sim, seed 47055113: the root stopped the job, then died).
    if (!maybe.empty() && !Deferred(st, lo)) {
      State heard = unfit;
      for (int s : maybe) Retire(&heard, s);
      if (Vacant(heard) > static_cast<int>(heard.spare.size())) {
        heard.story += "; a node unfit as its ranks end, no spare left";
        Final(heard, 125, lo, hi + end_s + 2 * L_, {}, "nospare");
      }
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

void Seer::Verdict(const State& st0, double lo, double hi) {
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
  for (int alone : options)
    for (bool waits : DeferWays(st0, lo, hi)) {
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
          if (waits) {
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

std::set<int> Seer::Culprits(const State& st) const {
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

bool Seer::NoteCulprit(State* st, int culprit, const ForeseenAttempt& hang, double lo, double hi,
                       bool waits) {
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
  if (waits) {
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

void Seer::Final(const State& st, int code, double lo, double hi, const std::set<int>& lost,
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
  // Without a majority no shim writes the job's record (launch/record_fence.h).
  f.no_record = st.no_record || refused == "majority";
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
  // A launcher's SIGTERM to a shim that the verdict had not reached yet
  // (each level of the tree may hold it a pause, on a busy machine): that
  // shim's stop ("stopped by its launcher", 143) goes to every shim as the
  // verdict's does, and each takes the first to come (aml-plane-sim, seed
  // 509794312: a loss's 125 and, 1.2 s after the loss, a signal's 143).
  // (A signalled shim itself exits as its own signal says, below; so does
  // the one whose signal is the verdict: its stop is not its own to take.)
  std::vector<int> raced;
  if (code >= 0)
    for (int s = 0; s < w_.n; ++s)
      if (s != st.signaller && w_.In(s) && w_.signal_at[s] >= lo - L_ &&
          w_.signal_at[s] < w_.dead_at[s] &&
          w_.signal_at[s] <= hi + L_ + o_.busy_s * (w_.max_depth + 1))
        raced.push_back(s);
  f.codes.assign(w_.n, 0);
  for (int s = 0; s < w_.n; ++s) {
    // What may reach this shim first, each in a window: the verdict, its
    // own signal, its cut from rank 0, or its part's end.
    struct Way {
      double lo, hi;
      uint8_t bits;
    };
    std::vector<Way> ways;
    const bool other_raced = raced.size() > 1 || (raced.size() == 1 && raced[0] != s);
    const uint8_t verdict = other_raced ? static_cast<uint8_t>(c | kExit143) : c;
    if (code >= 0 && s != st.signaller) ways.push_back({lo, hi + L_, verdict});
    else if (code >= 0 && other_raced) ways.push_back({lo, hi + L_, kExit143});
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

}  // namespace seer
}  // namespace aml
