// The job machine's dispatch of the tree's frames (job_machine.h): two
// tables, a child's frames and the parent's, each row's action beside it.
#include <algorithm>
#include <cstdint>

#include "shim/control/job_machine.h"
#include "shim/control/roster.h"

namespace aml {

// Each table row: a frame's type and what it does here. A frame whose type
// no row names is ignored (a newer shim's word this one does not know).
namespace {
template <class Row, size_t N>
const Row* RowOf(const Row (&rows)[N], const std::string& type) {
  for (const Row& r : rows)
    if (type == r.type) return &r;
  return nullptr;
}
}  // namespace

// A child's frame. `any`: every shim takes it; else rank 0's shim (the
// job's root) does, and another passes it up when `up` (an "orphan" is the
// overlay's below the root: tree_links.cc). `attempt`: a word of one attempt
// ("a"), dropped when that attempt is over (said again by a shim that moved
// below the heir after a cut: said_up_).
void JobMachine::OnFromChild(const std::string& frame, const Msg& m, double now) {
  using On = void (*)(JobMachine*, const std::string&, const Msg&, double);
  struct Row {
    const char* type;
    bool any, up, attempt;
    On on;
  };
  static const Row kRows[] = {
      // Its launcher stopped it: the job stops with it, with its status.
      {"bye", true, false, false,
       [](JobMachine* j, const std::string& fr, const Msg& msg, double at) { j->OnBye(fr, msg, at); }},
      // Its part of the job ended well.
      {"done", true, false, false,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         j->done_below_ += static_cast<int>(std::max<int64_t>(1, msg.Int("n", 1)));
         j->MaybeSendDone(at);
       }},
      {"orphan", false, false, false,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         j->NoteOrphan(static_cast<int>(msg.Int("shim", -1)), msg.Int("silent", 0) == 1, at, true);
       }},
      {"well", false, true, true,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         j->NoteWell(static_cast<int>(msg.Int("shim", -1)), at);
       }},
      {"ended", false, true, false,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         const int shim = static_cast<int>(msg.Int("shim", -1));
         if (shim >= 0 && shim < j->c_.size && !msg.Str("host").empty() &&
             !j->shim_hosts_.count(shim))
           j->shim_hosts_[shim] = msg.Str("host");
         j->NoteEnded(shim, msg.Number("out", 0), msg.Str("unfit"), at);
       }},
      {"fail", false, true, true,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         FailNote f;
         f.wall_time = msg.Number("time");
         f.rank = static_cast<int>(msg.Int("rank"));
         f.node = static_cast<int>(msg.Int("node"));
         f.code = static_cast<int>(msg.Int("code", 1));
         f.shim = static_cast<int>(msg.Int("shim", -1));
         f.host = msg.Str("host");
         f.status = msg.Str("status");
         f.summary = msg.Str("summary");
         f.json = msg.Str("json");
         j->NoteFailure(std::move(f), at);
       }},
      {"lost", false, true, false,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         if (j->Over()) return;
         j->DecideBeforeLoss(at);
         if (j->Over()) return;
         if (j->Spares()) j->RetireLost(static_cast<int>(msg.Int("shim", -1)), msg.Str("what"), at);
         else j->StopAsLost(msg.Str("what"), at);
       }},
      // --warm-restart: how its ranks of this attempt started.
      {"warm", false, true, true,
       [](JobMachine* j, const std::string&, const Msg& msg, double) {
         j->NoteWarm(static_cast<int>(msg.Int("shim", -1)), static_cast<int>(msg.Int("w", -1)),
                     static_cast<int>(msg.Int("c", -1)));
       }},
      {"stacks", false, true, false,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) { j->NoteStacks(msg, at); }},
      {"records", false, true, false,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) { j->NoteRecords(msg, at); }},
  };
  if (root_ && m.Int("term", 0) > term_) {
    // A word of a newer root's term: this root lost the job (paused or cut
    // off while a heir took it); it never acts on it again.
    return StepDown("a newer root holds the job (term " + std::to_string(m.Int("term", 0)) +
                        ", this shim's " + std::to_string(term_) +
                        "): this shim steps down and writes no record of the job",
                    now);
  }
  const Row* row = RowOf(kRows, m.type());
  if (!row) return;
  if (!row->any && !root_) {
    // A word of this attempt from below is kept with this shim's own: should
    // this shim move below the heir, it says them all again (its cut link
    // may have lost them on the way; the root takes each once). Before, a
    // failure passed up in the seconds before the cut was found was lost,
    // and the root waited for the failed node's "well" for ever
    // (aml-plane-sim, seed 162909490).
    const bool this_attempt = m.Int("a", attempts_.restarts()) == attempts_.restarts();
    if (row->up && row->attempt && this_attempt) SayUp(frame);
    else if (row->up) ports_->SendUp(frame);
    return;
  }
  if (row->attempt && m.Int("a", attempts_.restarts()) != attempts_.restarts()) return;
  row->on(this, frame, m, now);
}

// A frame from the parent (rank 0's words, relayed down the tree). `down`:
// passed on to this shim's children first, whatever it does here.
void JobMachine::OnFromParent(const std::string& frame, const Msg& m, double now) {
  using On = void (*)(JobMachine*, const std::string&, const Msg&, double);
  struct Row {
    const char* type;
    bool down;
    On on;
  };
  static const Row kRows[] = {
      {"collect", true,
       [](JobMachine* j, const std::string&, const Msg&, double at) {
         if (j->Over() || j->Busy()) return;
         j->Enter(JobState::kCollecting, at);
         j->Order(CollectStacksOrder{});
       }},
      // Rank 0 heard of the job's first failure: end this node's ranks now
      // (with "records", once their flight records are taken); the verdict
      // follows (a stop, or a restart round's end).
      {"halt", true,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         if (j->Over() || j->Busy() || j->state_ == JobState::kDone ||
             j->state_ == JobState::kHalted)
           return;
         if (j->state_ == JobState::kRunning) j->Enter(JobState::kHalted, at);
         EndAttemptOrder halt;
         halt.records = msg.Int("records", 0) == 1;
         j->Order(std::move(halt));
       }},
      // The root restarts the job: end this node's ranks, say so, wait. A
      // new root asks "again": every shim says so anew (its word may have
      // gone to the root that was lost).
      {"end", true,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         if (j->Over()) return;
         if (msg.Int("again", 0) == 1) j->ended_sent_ = false;
         else if (j->state_ == JobState::kEnding) return;
         if (j->state_ != JobState::kEnding) {
           j->Enter(JobState::kEnding, at);
           j->Order(EndAttemptOrder{});
         }
         j->MaybeSendEnded(at);
       }},
      // (One it had is said again to a shim that moved below the heir.)
      {"restart", true,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         if (j->Over() || msg.Int("n") <= j->attempts_.restarts()) return;
         RestartOrder o;
         o.restart = static_cast<int>(msg.Int("n"));
         o.master_port = static_cast<int>(msg.Int("port"));
         o.agent_store = msg.Int("store", 0) == 1;
         o.line = msg.Str("line");
         if (j->Spares()) {
           const int node = Roster::NodeIn(msg.Str("nodes"), j->c_.rank);
           o.roster = true;
           o.node_rank = j->node_ = node < 0 ? -1 : node;
           o.master_addr = msg.Str("maddr");
         }
         j->attempts_.Follow(o.restart);
         j->ResetRound(at);
         j->Order(std::move(o));
       }},
      {"finish", true,
       [](JobMachine* j, const std::string&, const Msg&, double at) { j->OnFinish(at); }},
      {"stop", true,
       [](JobMachine* j, const std::string&, const Msg& msg, double at) {
         if (j->Over()) return;
         j->Stop(StopOrder::Of(static_cast<int>(msg.Int("code", 1)), j->StopLine(msg), ""), at);
       }},
      // (OnBye passes it up and down itself.)
      {"bye", false,
       [](JobMachine* j, const std::string& fr, const Msg& msg, double at) {
         j->cut_off_ = true;  // it goes; not a loss to report
         j->OnBye(fr, msg, at);
       }},
  };
  const Row* row = RowOf(kRows, m.type());
  if (!row) return;
  // The root's term, where its word says it: what this shim stamps its
  // records with (launch/record_fence.h).
  term_ = std::max<int>(term_, static_cast<int>(m.Int("term", term_)));
  if (row->down) ports_->SendDown(frame);
  row->on(this, frame, m, now);
}

}  // namespace aml
