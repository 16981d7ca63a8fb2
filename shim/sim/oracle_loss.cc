// The oracle's rules for a lost shim (oracle_seer.h): when rank 0 takes the
// loss, its verdict, and with --spares a spare in its place.
#include "shim/sim/oracle_seer.h"

namespace aml {
namespace seer {

void Seer::Take(const State& st0, const Event& e, double lo, double hi) {
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
      st.signaller = s;
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
      // (A busy shim reaps its failing rank up to a pause late: the attempt
      // it measures is that much longer, and may count its output as
      // before its last second: aml-plane-sim, seed 900479.)
      const bool maybe_progress =
          !progress && !p_.quiet && st.t_lo + kFirstOutputS <= t + o_.busy_s - kLastWordsS;
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
      for (int culprit : Culprits(st))
        for (bool waits : DeferWays(st, lo, hi)) {
          State one = st;
          one.culprit = {culprit};
          if (!NoteCulprit(&one, culprit, a, lo, hi, waits)) continue;  // no spare left: the end
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

void Seer::TakeLossOfSomeHeir(const State& st, const Event& e, double lo, double hi) {
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

void Seer::TakeLoss(State st, const Event& e, double lo, double hi, bool heir_last,
                    int heir_is) {
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
  } else if (!majority && nospare && heir >= 0 && !st.gone.count(heir)) {
    // The heir silent and awaited below the root's successor (its own link
    // may be all that was cut, tree_links_losses.cc): its cut counts as unsettled
    // from the root's finding of its silence (HeirWatch::Silent), and the
    // verdict may wait as after a heir lost alive.
    for (size_t i = 0; i < statics_.size(); ++i) {
      const Event& h = statics_[i];
      if (h.kind != Kind::kLoss || !h.who.count(heir) || st.dropped.count(static_cast<int>(i)) ||
          MoveWaitS(heir) <= 0 || h.lo > hi)
        continue;
      State waits = st;
      waits.nospare_lo = h.lo + kMaxSilenceS + 1;
      waits.nospare_hi = h.hi - MoveWaitS(heir) + kMaxSilenceS + 1 + 2 * L_;
      LossVerdict(waits, e, lo, hi, held, true);
      break;
    }
  }
  LossVerdict(st, e, lo, hi, held, false);
}

void Seer::LossVerdict(State st, const Event& e, double lo, double hi, bool held, bool waits) {
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
    // Without a majority the root writes no record of the job, whoever may
    // hold it (launch/record_fence.h).
    if (majority) {
      st.no_record = true;
      st.story += " (no record)";
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

void Seer::Defer(Event* restart, const State& st) const {
  if (st.nospare_lo < 0 || Vacant(st) <= static_cast<int>(st.spare.size())) return;
  restart->lo = std::max(restart->lo, st.nospare_lo);
  restart->hi = std::max(restart->hi, st.nospare_hi);
}

int Seer::HeirOf(const State& st) const {
  for (int c : w_.kids[w_.root])
    if (!st.gone.count(c)) return c;
  return -1;
}

}  // namespace seer
}  // namespace aml
