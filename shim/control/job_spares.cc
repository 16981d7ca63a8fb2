// The job's state machine (job_machine.h) with --spares: the end of a job
// in which no shim leaves early, the loss of a node, the streak of a node
// whose ranks fail first, and "no spare left" (docs/control-plane.md,
// "Spares and retirement"). Rank 0 keeps the roster (roster.h); each
// restart order says who holds which NODE_RANK.
#include <algorithm>

#include "shim/base/log.h"
#include "shim/base/range_list.h"
#include "shim/control/job_machine.h"
#include "shim/control/liveness.h"

namespace aml {

// Rank 0: the host of each NODE_RANK's holder as an attempt starts.
void JobMachine::NoteAttemptNodes() {
  std::vector<std::string> nodes;
  for (int n = 0; roster_ && n < roster_->nodes(); ++n) {
    const int h = roster_->HolderOf(n);
    const std::string host = HostOf(h);
    nodes.push_back(host.empty() ? "rank " + std::to_string(h) + "'s shim" : host);
  }
  attempts_.SetNodes(std::move(nodes));
}

std::string JobMachine::HostOf(int shim) const {
  auto it = shim_hosts_.find(shim);
  return it == shim_hosts_.end() ? "" : it->second;
}

// Every shim that still counts is in `heard` (the lost ones are not
// waited for).
bool JobMachine::AllIn(const std::set<int>& heard) const {
  for (int s = 0; s < c_.size; ++s)
    if (Counted(s) && !heard.count(s)) return false;
  return true;
}

// ---- The end: every NODE_RANK's ranks ended with 0

// This shim's ranks (of a NODE_RANK) all ended with 0: say so to rank 0,
// which ends the job once every NODE_RANK did; until then the shim stays.
void JobMachine::MaybeSendWell(double now) {
  if (!Spares() || node_ < 0 || well_sent_ || state_ != JobState::kRunning || !children_done_ ||
      failed_at_ > 0 || outcome_.code != 0)
    return;
  well_sent_ = true;
  if (root_) return NoteWell(c_.rank, now);
  SayUp(Msg("well").Set("shim", c_.rank).Set("a", attempts_.restarts()).Encode());
}

void JobMachine::NoteWell(int shim, double now) {
  if (!roster_ || state_ != JobState::kRunning || finished_) return;
  if (roster_->NodeOf(shim) < 0) return;  // retired meanwhile: its place is empty
  // (well_ holds holders only: a holder retired since is taken out below.)
  well_.insert(shim);
  if (static_cast<int>(well_.size()) < roster_->nodes() || roster_->Vacant() > 0) return;
  for (int h : roster_->Holders())
    if (!well_.count(h)) return;
  // The job ended well: every shim may go (each says done, as without spares).
  ports_->SendDown(Msg("finish").Encode());
  OnFinish(now);
}

void JobMachine::OnFinish(double now) {
  if (Over() || finished_) return;
  finished_ = true;
  MaybeSendDone(now);
}

// ---- A node lost

// Rank 0 heard that `shim` was lost: it and every shim below it in the tree
// (each cut off, it ends its part) are retired. A spare lost is only noted;
// a NODE_RANK's holder lost ends the attempt (the loss is its failure), and
// the next one starts with a spare in its place, or the job ends (125) when
// none is left.
void JobMachine::RetireLost(int shim, const std::string& what, double now) {
  if (Over()) return;
  if (shim < 0 || shim == c_.rank || shim >= c_.size) return StopAsLost(what, now);
  std::vector<int> cut = {shim};
  for (int s : BelowOf(shim)) cut.push_back(s);
  bool held = false;
  std::vector<int> fresh;
  for (int s : cut) {
    if (!gone_.insert(s).second) continue;
    fresh.push_back(s);
    well_.erase(s);
    held |= roster_->Retire(s, HostOf(s), LostReason(shim, s, what), Attempt());
  }
  // The heir hears of it: its record (the attempt's start) does not say.
  if (root_ && heir_ >= 0 && !gone_.count(heir_) && !fresh.empty())
    ports_->SendTo(heir_, Msg("gone")
                              .Set("shim", shim)
                              .Set("what", what)
                              .Set("cut", Roster::Runs(fresh))
                              .Set("attempt", Attempt())
                              .Encode());
  // A heir electing decides once the wait is over (job_heir.cc).
  if (state_ == JobState::kElecting) return CheckTakeover(now);
  // The heir lost: another takes its place, with the record.
  if (heir_ >= 0 && gone_.count(heir_)) NameHeir();
  // The job had ended well: nothing of it is lost.
  if (finished_) return;
  // More than half of the shims lost: they may be alive on the other side
  // of a cut, and take the job there (job_heir.cc); this side ends, and
  // writes the job's record only when no heir of its can hold the job.
  if (LostMajority())
    return StopNoMajority("no majority: " + EscapeControl(what) + "; " +
                              MajorityText(c_.size - static_cast<int>(gone_.size())),
                          heir_ >= 0 ? ShimName(heir_, HostOf(heir_)) + ", its heir," : "", now);
  // A NODE_RANK retired (now or before) that no spare left can take. When
  // a heir was lost that may live beyond a cut, the other losses of that
  // cut are all found within kMaxSilenceS: until then the attempt ends as
  // for any lost holder, and the restart waits (job_restarts.cc); more than
  // half lost by then is "no majority", not "no spare".
  if (roster_->Vacant() > static_cast<int>(roster_->Spares().size()) && !HeirLostAlive(now))
    return StopNoSpare("no spare left: " + EscapeControl(what), now);
  if (!held) {
    // A spare: the job goes on; a round or a roll-call no longer waits for it.
    RecheckRound(now);
    if (state_ == JobState::kCollecting && AllIn(reported_)) FinishCollect(now);
    return;
  }
  replaced_ = true;
  switch (state_) {
    case JobState::kRunning:
    case JobState::kDeciding: {
      FailNote f;
      f.wall_time = ports_->WallNow();
      f.shim = shim;
      f.code = 125;
      f.lost = what;
      NoteFailure(std::move(f), now);
      break;
    }
    case JobState::kCollecting:
      if (AllIn(reported_)) FinishCollect(now);
      break;
    case JobState::kEnding:
      RecheckRound(now);
      break;
    default:
      break;  // backing off: the next attempt fills it
  }
}

// Why `s` is retired when `lost` was: it was, or it was below it.
std::string JobMachine::LostReason(int lost, int s, const std::string& what) const {
  return s == lost ? "lost: " + what
                   : "cut off: " + ShimName(lost, HostOf(lost)) + " above it in the tree was lost";
}

// ---- A node that fails first, attempt after attempt

// The attempt's first failure (by its node's clock) on one node's ranks
// alone, with a status that is not aml-shim's or the command's own
// (125-127): a streak for that node; --retire-after in a row retires it.
void JobMachine::NoteStreak(const FailNote& first, double now) {
  std::set<int> nodes;
  for (const FailNote& f : fails_)
    if (f.lost.empty()) nodes.insert(f.shim);
  const bool own_failure = first.code == 125 || first.code == 126 || first.code == 127;
  const bool alone = nodes.size() == 1 && first.shim >= 0 && !own_failure;
  const int streak = roster_->NoteFirstFailure(alone ? first.shim : -1);
  if (!alone || streak < c_.retire_after) return;
  const int last = attempts_.restarts() + 1;
  RetireOrStop(first.shim,
               "its ranks failed first in " + std::to_string(streak) + " attempts in a row (" +
                   std::to_string(last - streak + 1) + " to " + std::to_string(last) +
                   "; last: rank " + std::to_string(first.rank) + " (" +
                   EscapeControl(first.status) + "))",
               now);
}

// A hang's culprit, when every culprit rank is on one node: a streak for
// that node, as a first failure is; a hang with no single culprit node
// breaks the streak (docs/control-plane.md, "Spares and retirement").
void JobMachine::NoteCulprit(const std::optional<Culprit>& c, double now) {
  const int shim = c && c->found && c->node >= 0 ? c->shim : -1;
  const int streak = roster_->NoteFirstFailure(shim);
  if (shim < 0 || streak < c_.retire_after) return;
  const int last = attempts_.restarts() + 1;
  std::vector<int> ranks;
  for (const CulpritRank& r : c->missing) ranks.push_back(r.rank);
  RetireOrStop(shim,
               "its ranks failed first or hung the job in " + std::to_string(streak) +
                   " attempts in a row (" + std::to_string(last - streak + 1) + " to " +
                   std::to_string(last) + "; last: " + (ranks.size() == 1 ? "rank " : "ranks ") +
                   FormatRanges(ranks) + " never entered " + EscapeControl(c->op.op) + " #" +
                   std::to_string(c->op.seq) + " of group " + EscapeControl(c->pg) + ")",
               now);
}

// A node that failed its check before the next attempt (a GPU gone, a
// port down: shim/plan/node_check.h) is retired at the round's end; a
// spare takes its place, or the job ends when none is left (a heir
// electing decides that once it holds the job).
void JobMachine::NoteUnfit(int shim, const std::string& what, double now) {
  if (!roster_ || roster_->Retired(shim) || Over()) return;
  const std::string reason = "its check before attempt " + std::to_string(attempts_.restarts() + 2) +
                             " failed: " + EscapeControl(what);
  attempts_.current().node_replaced = true;
  if (state_ == JobState::kElecting) {
    roster_->Retire(shim, HostOf(shim), reason, attempts_.restarts() + 1);
    return;
  }
  RetireOrStop(shim, reason, now);
}

// Retires a NODE_RANK's holder (not lost: it stays linked and idle); stops
// the job when no spare can take its place. False when it stopped.
bool JobMachine::RetireOrStop(int shim, const std::string& reason, double now) {
  roster_->Retire(shim, HostOf(shim), reason, attempts_.restarts() + 1);
  well_.erase(shim);
  replaced_ = true;
  // (After a heir was lost alive the restart waits out its cut first.)
  if (roster_->Vacant() <= static_cast<int>(roster_->Spares().size()) || HeirLostAlive(now))
    return true;
  StopNoSpare("no spare left: " + ShimName(shim, HostOf(shim)) + " was retired (" + reason + ")",
              now);
  return false;
}

// No spare for a retired node: every shim exits 125, and failure.json names
// the retired nodes (a batch script can requeue without them).
void JobMachine::StopNoSpare(const std::string& why, double now) {
  if (Over()) return;
  StopOrder own = StopOrder::Of(125, "aml-shim: " + EscapeControl(why) + ": ending the job\n", "");
  if (c_.max_restarts > 0 && state_ != JobState::kBackingOff) {
    AttemptRecord a =
        state_ == JobState::kEnding ? attempts_.current() : attempts_.New(ports_->WallNow());
    if (state_ == JobState::kDeciding && !fails_.empty() && EarliestFailure().lost.empty()) {
      a = FailedAttempt(EarliestFailure());
    } else if (state_ == JobState::kCollecting && hang_attempt_) {
      a = *hang_attempt_;  // the hang whose culprit's node was retired
    } else if (state_ != JobState::kEnding) {
      a.exit_code = 125;
      a.what = EscapeControl(why);
    }
    attempts_.Keep(a);
  }
  RecordAttempts(&own, "not restarted: " + EscapeControl(why));
  StopJob(LostStop(why),
          std::move(own), now);
}

// More than half of the shims lost (a root's), or not more than half
// reached (a heir's): this part of the job ends (125). It writes no record
// of the job (a shim writes the job's record only while it holds the job
// with a majority: launch/record_fence.h): the other part may hold the job,
// and its word is the job's; this shim's goes to its own node's file.
// `holder`: the shim that may hold the job, where it can say ("" when not).
void JobMachine::StopNoMajority(const std::string& why, const std::string& holder, double now) {
  lost_job_ = true;
  std::string line = "aml-shim: " + EscapeControl(why) + ": this part of the job ends; ";
  line += holder.empty() ? "the other part may hold the job"
                         : holder + " may hold the job (a new root names itself in its own line)";
  line += ", so this shim writes no record of it\n";
  StopOrder own = StopOrder::Of(125, line, "");
  own.no_record = true;
  StopJob(LostStop(why), std::move(own), now);
}

// A heir of this root lost while it may live, up to kMaxSilenceS and a
// second ago: the other losses of its cut may not all be found yet.
bool JobMachine::HeirLostAlive(double now) const {
  return heirs_.CutUnsettled(now);
}

// The restart line's preface: who took each retired NODE_RANK.
std::string JobMachine::RosterLines(const std::vector<int>& before) const {
  std::string out;
  for (int n = 0; n < roster_->nodes(); ++n) {
    const int now_holder = roster_->HolderOf(n);
    const int was = before[static_cast<size_t>(n)];
    if (now_holder == was) continue;
    std::string why;
    for (const Retirement& r : roster_->retirements())
      if (r.node == n) why = r.reason;
    out += "aml-shim: NODE_RANK " + std::to_string(n) + " moves to " +
           ShimName(now_holder, HostOf(now_holder)) + " (a spare)" +
           (why.empty() ? "" : "; its last holder was retired: " + EscapeControl(why)) +
           (n == 0 ? "; MASTER_ADDR moves with it" : "") + "\n";
  }
  return out;
}

}  // namespace aml
