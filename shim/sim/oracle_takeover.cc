// The oracle's rules for a lost root (oracle_seer.h): its heir takes the job
// with a majority (a new root), a child of the root moved below the heir.
#include "shim/sim/oracle_seer.h"

namespace aml {
namespace seer {

void Seer::RootFound(const Fault& f, Event* e) const {
  if (f.kind == FaultKind::kKill) {
    e->lo = f.at_s;
    e->hi = f.at_s + 0.02 + 2 * L_;
  } else {
    Silence(f.at_s, e);
  }
}

uint8_t Seer::OutsideBits(int s) const {
  uint8_t bits = kExit125;
  if (w_.any_signal) bits |= kExit143 | kExit137;
  if (w_.fails[s]) bits |= kExit7;
  if (o_.hang_s > 0 && p_.quiet) bits |= kExit124;
  if (w_.dead_at[s] < kInf) bits |= kNoExit;
  return bits;
}

void Seer::TakeRootLoss(const State& st, const Event& e, double lo, double hi) {
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

void Seer::Loosely(const State& st, const Fault& f, int root, const std::string& why) {
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

void Seer::Moved(const State& st0, int c, int h, double lo, double hi, bool heir) {
  State st = st0;
  st.now = std::max(st.now, lo);
  st.story += heir ? "; the heir, shim " + std::to_string(c) + ", moves below the successor, shim " +
                         std::to_string(h) + " (the heir now), and stays in the job"
                   : "; shim " + std::to_string(c) + " moves below the heir, shim " +
                         std::to_string(h) + ", and stays in the job";
  std::vector<int> parent = w_.parent;
  parent[static_cast<size_t>(c)] = h;
  std::set<int> relinked = w_.relinked;
  relinked.insert(c);
  StepInTree(std::move(st), Facts(p_, o_, w_.root, parent, relinked, hi, w_.root_since), lo);
}

void Seer::StepInTree(State st, World w, double from) {
  World saved = std::move(w_);
  std::vector<Event> saved_statics = statics_;
  st.dropped.clear();
  w_ = std::move(w);
  BuildStatics(from);
  Step(st);
  w_ = std::move(saved);
  statics_ = std::move(saved_statics);
}

void Seer::TakeRootLossTo(State st, const Event& e, double lo, double hi, int h) {
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
  if (!dies && spares_ && w_.n >= 3 && f.kind == FaultKind::kCut && h >= 0 &&
      e.who.size() == 1 && e.who.count(h) && !st.gone.count(h) && w_.dead_at[h] > hi) {
    // The heir's own link to the root cut, the root alive: the heir asks
    // the root's successor (its next child still linked) whether it hears
    // the root, and moves below it, handing it its place (tree_links_losses.cc);
    // the root renames the successor its heir. Strictly so when nothing
    // else comes meanwhile, as for another child's cut (below); else the
    // heir may also find no successor to vouch and hold its election.
    int next = -1;
    for (int c : w_.kids[r])
      if (c != h && !st.gone.count(c)) {
        next = c;
        break;
      }
    if (next >= 0 && w_.dead_at[next] > hi && Split(w_, h, next) > hi &&
        std::min(w_.cut_at[next], Split(w_, next, r)) > hi) {
      bool alone = true;
      for (const Fault& g : p_.faults)
        if (&g != &f && g.at_s >= f.at_s - kSteadySilenceS - o_.beat_s && g.at_s <= hi + L_)
          alone = false;
      if (alone && st.phase == State::Phase::kRunning && st.t_lo + p_.run_s > hi + 2 * L_)
        return Moved(st, h, next, lo, hi, true);
      Loosely(st, f, r, "the heir, shim " + std::to_string(h) + ", moves below the successor, shim " +
                            std::to_string(next) + ", and stays in the job (loosely)");
    }
  }
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
  // The heir lost within the window in which the root's loss is found: it
  // may have taken the job first (a kill's closes are found at once), and
  // lost it in turn to its own heir (aml-plane-sim, seed 290406894).
  if (!can && spares_ && w_.n >= 3 && h >= 0 && st.restarts < p_.max_restarts &&
      w_.dead_at[h] > lo)
    Loosely(st, f, r, "the heir, shim " + std::to_string(h) +
                          ", may take the job before its own loss (loosely)");
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
    // in the election (tree_links_losses.cc).
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
  st.heir_lost_lo = st.heir_lost_hi = -1;
  st.nospare_lo = st.nospare_hi = -1;
  st.root = h;
  st.extra_halt = {-1, -1};
  // The old root may have halted its side first, from the fault on (it
  // finds a holder of its side lost before it finds it has no majority).
  if (!dies) st.extra_halt = {e.at > 0 ? std::min(e.at, lo) : lo, hi};
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

std::set<int> Seer::HeirSideUnreached(const State& st, double hi) const {
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

}  // namespace seer
}  // namespace aml
