// The tree's links (tree_links.h): a link lost, and where its shim goes
// (awaited below the heir, moved below the root's successor, the
// election, a root that steps down).
#include "shim/control/tree_links.h"

#include <algorithm>
#include <string>

#include "shim/base/log.h"

namespace aml {

// ---- Losses

void TreeLinks::OnChildClosed(int rank, const std::string& why, double now) {
  Woke(now);
  Child* c = Find(rank);
  if (c && !c->done && !c->gone) Lose(*c, why, false, now);
}

void TreeLinks::Lose(Child& c, const std::string& why, bool silent, double now) {
  // A child that said it left for the heir is awaited there (kRelinkS):
  // the heir says when it is linked below it ("moved").
  if (c.left && c.relink_until < 0 && go_ && machine_.root()) {
    c.relink_until = now + kRelinkS;
    c.relink_why = why;
    return;
  }
  c.gone = true;
  departed_output_ = std::max(departed_output_, c.output);
  if (!go_) return;
  const int rank = c.rank;
  const std::string what = "the control plane lost " + ShimName(rank, c.host) + " (" +
                           EscapeControl(why) + ")";
  const bool may_live = silent || c.left;
  if (wake_.held()) {
    // Woken from a pause: the job hears of the loss once this root heard
    // its links anew (wake_gate.h).
    wake_.NoteLoss();
    wake_.Hold([this, rank, what, may_live](double at) {
      machine_.OnShimLost(rank, what, may_live, at);
    });
  } else {
    machine_.OnShimLost(rank, what, may_live, now);
  }
  // The root's successor lost (the heir kept): another is named.
  const int heir = machine_.heir();
  if (machine_.root() && rank == next_ && heir >= 0 && heir != rank && Keeps(heir)) SayHeir(heir);
}

double TreeLinks::AwaitMoveUntil(const Child& c) const {
  // Only the root's children link to its heir, and the heir to the root's
  // successor; a root without them alive has no one to move below.
  const int heir = machine_.heir();
  if (!machine_.root() || heir < 0) return -1;
  const int to = heir == c.rank ? next_ : heir;
  if (to < 0 || to == c.rank) return -1;
  bool linked = false;
  for (const Child& h : children_)
    if (h.rank == to) linked = !h.done && !h.gone && h.relink_until < 0;
  if (!linked) return -1;
  // Its last frame came within a beat of the last one of ours it read.
  return std::max(c.live.last_heard + beat_s_ + c.their_allowance, c.their_startup_until) +
         kRelinkS;
}

void TreeLinks::OnParentClosed(const std::string& why, double now) {
  LoseParent(why, false, now);
}

void TreeLinks::LoseParent(const std::string& why, bool silent, double now) {
  if (parent_lost_) return;
  parent_lost_ = true;
  if (!go_) {
    abort_ = "control plane: lost its parent, " + ShimName(parent_, "") + " (" + why + ")";
    return;
  }
  // The root lost, a heir named (job_heir.cc): the heir takes its place,
  // every other child links to the heir; else this part is cut off.
  const int heir = heir_;
  heir_ = -1;
  const std::string what =
      "the control plane lost " + ShimName(parent_, "") + " (" + EscapeControl(why) + ")";
  if (heir == job_.rank && silent && next_ >= 0 && next_ != job_.rank && adopted_.empty() &&
      machine_.MayTakeOver(false)) {
    // The heir: is it the root that is lost, or only this shim's link to
    // it? The successor answers how long ago it last heard the root; if
    // lately, the root lives, and this shim moves below the successor and
    // stays in the job, handing it the heir's place (before, it held an
    // election no other shim joined and ended its part, 125). Not asked
    // when other children of the root already found it lost and linked
    // here: the root is lost for them too.
    const double ago = io_->RootHeardAgo(next_, next_addr_, now);
    if (ago >= 0 && ago < kRootHeardS && MoveBelow(next_, next_addr_, why, silent, true, now))
      return;
  }
  if (heir >= 0 && machine_.MayTakeOver(heir == job_.rank)) {
    // Should the root live (frozen, or beyond a cut that heals), it reads
    // that this shim left it alive: its close is no death (job_heir.cc).
    io_->Send(parent_, Msg("left").Set("silent", silent ? 1 : 0).Encode());
    if (heir == job_.rank) {
      parent_ = -1;
      machine_.OnRootLost(true, silent, what, now);
      // The losses it passed up to the root, lost with it, are its own now;
      // the root's children it took in while it still heard the root are
      // in its election (they were asked to end with every shim below).
      for (const std::string& lost : lost_up_)
        if (auto m = Msg::Decode(lost); m.ok()) machine_.OnFromChild(lost, *m, now);
      // (Each found the root silent before this shim lost it: what this
      // shim found now decides how long the election waits for an old root
      // alive, not their earlier findings; before, a root killed after a
      // child had moved here kept the election 31 s past its close:
      // aml-plane-sim, seed 610905765.)
      for (const std::string& orphan : adopted_)
        if (auto m = Msg::Decode(orphan); m.ok())
          machine_.NoteOrphan(static_cast<int>(m->Int("shim", -1)), false, now, false);
      return;
    }
    // (Never below a child of its own: the heir handed it its place, and
    // this shim is the heir now.)
    if (!Keeps(heir) && MoveBelow(heir, heir_addr_, why, silent, false, now)) return;
  }
  // A child of the root (it named a heir) that reached no heir: the root
  // and its heir were lost together (or no restart is left): it says why
  // the job ended in failure.json (the first of the root's children wins).
  const std::string via = heir >= 0 && heir != job_.rank
                              ? " (and its heir, " + ShimName(heir, "") + " at " +
                                    EscapeControl(heir_addr_) + ", did not take this shim)"
                              : "";
  // The heir it had linked to was lost before it held the job (it named no
  // heir of its own): the root and its heir were lost together all the
  // same, said as above (a loaded heir may welcome a child in the moment
  // before its own end: test_new_root failed so in a CI run).
  if (heir < 0 && relinked_heir_ >= 0 && relinked_heir_ == parent_) {
    relinked_heir_ = -1;
    return machine_.OnParentLost("aml-shim: lost the control plane: the link to its parent, " +
                                     lost_root_ + " (and its heir, " + ShimName(parent_, "") +
                                     " at " + EscapeControl(parent_addr_) +
                                     ", did not take this shim: it was lost too, " +
                                     EscapeControl(why) + "); ending this node's ranks\n",
                                 now, true);
  }
  machine_.OnParentLost("aml-shim: lost the control plane: the link to its parent, " +
                            ShimName(parent_, "") + " at " + parent_addr_ + ", " +
                            EscapeControl(why) + via + "; ending this node's ranks\n",
                        now, heir >= 0);
}

bool TreeLinks::MoveBelow(int to, const std::string& addr, const std::string& why, bool silent,
                          bool was_heir, double now) {
  const std::string lost_root =
      ShimName(parent_, "") + " at " + parent_addr_ + ", " + EscapeControl(why);
  if (!io_->Relink(to, addr, now)) return false;
  LogVerbose("control plane: lost its link to " + ShimName(parent_, "") + " (" +
             EscapeControl(why) + "); linked below " +
             (was_heir ? "the root's successor, " + ShimName(to, "") +
                             ", which still hears the root and is its heir now"
                       : "its heir, " + ShimName(to, "")) +
             ", in the job still");
  const std::string what =
      "the control plane lost " + ShimName(parent_, "") + " (" + EscapeControl(why) + ")";
  relinked_heir_ = to;
  lost_root_ = lost_root;
  parent_ = to;
  parent_addr_ = addr;
  to_parent_.Reset();
  parent_root_ = RootClock();
  parent_lost_ = false;
  parent_live_.Start(now);
  machine_.OnRootLost(false, silent, what, now, was_heir);
  if (was_heir) {
    // The heir's place goes with its record and the root's losses since.
    if (!machine_.election().record().empty()) io_->Send(parent_, machine_.election().record());
    for (const std::string& gone : machine_.election().gone_notes()) io_->Send(parent_, gone);
  }
  // The losses it passed up may have gone to the lost root alone: the
  // heir hears them again (else it would wait for those shims until its
  // election's deadline).
  for (const std::string& lost : lost_up_) io_->Send(parent_, lost);
  return true;
}

// The root's heir found it lost and holds the job's election (its "left"),
// or the root woke from a pause and heard no majority (wake_gate.h): this
// root's children link to the heir as if its link had closed ("yield"),
// and it ends its part with 125, writing nothing of the job.
void TreeLinks::StepDown(double now, const std::string& why) {
  const int heir = machine_.heir();
  for (const Child& c : children_)
    if (!c.done && !c.gone && c.rank != heir) io_->Send(c.rank, Msg("yield").Encode());
  machine_.StepDown(why, now);
}

}  // namespace aml
