// The job's protocol on the control plane (docs/control-plane.md, "The job's
// state machine"): what every shim decides about the job once it runs —
// the first failure's verdict, stop orders, the hang verdict and its
// roll-call, restart rounds, and when a shim may exit. It knows nothing of
// sockets or clocks: the overlay (plane.h, or the simulator's, sim/) hands
// it events with the time they happen and carries the frames it sends up
// (towards rank 0) and down (to every shim below). Rank 0's shim decides;
// every other shim obeys and passes words on.
//
// Its states and the moves between them are tables (job_states.h).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/job_link.h"
#include "shim/control/pace/pace_sample.h"
#include "shim/control/pace/straggler_judge.h"
#include "shim/control/straggler_check.h"
#include "launch/restart_policy.h"
#include "shim/control/attempts.h"
#include "shim/control/election.h"
#include "shim/control/failure_records.h"
#include "shim/control/job_states.h"
#include "shim/control/roll_call.h"
#include "shim/control/roster.h"
#include "shim/control/shim_name.h"
#include "shim/control/wire.h"

namespace aml {

struct JobConfig {
  int rank = 0, size = 1;  // among the shims
  int node = 0;            // this shim's NODE_RANK
  std::string host;
  std::vector<int> ranks;  // this shim's children's ranks
  int world_ranks = 1;     // every shim's children
  std::optional<double> hang_timeout_s;
  // --flight-recorder auto (with --hang-timeout): a hang's verdict names
  // its culprit from the ranks' flight records, which each node waits for
  // --dump-timeout at most before it reads stacks (0: off).
  bool flight_recorder = false;
  double dump_timeout_s = 0;
  double grace_s = 30;     // --grace
  // --straggler-check: rank 0 asks for a look every this long (0: never);
  // --retire-slow: a node named slow is retired (with spares).
  double pace_every_s = 0;
  bool retire_slow = false;
  std::string run_id;      // failure.json's "run"
  std::string log_dir;     // --log-dir ("" when none), for the roll-call's words
  int max_restarts = 0;    // --max-restarts
  int spares = 0;          // --spares: the last `spares` shims wait (roster.h)
  int ranks_per_node = 1;  // with spares: NODE_RANK n's ranks are n * this + i
  int retire_after = 2;    // --retire-after
  // With --spares: this node's check before another attempt ("" when fit,
  // else what it lost: shim/plan/node_check.h; nothing yet while it runs,
  // asked again until it answers: shim/preflight/node_nccl_check.h); none:
  // always fit.
  std::function<std::optional<std::string>()> node_check;
};

// What the machine needs of its overlay.
class JobPorts {
 public:
  virtual ~JobPorts() = default;
  virtual void SendUp(const std::string& frame) = 0;    // to the parent (none at rank 0)
  virtual void SendDown(const std::string& frame) = 0;  // to every child shim linked
  // The last output of this node's ranks and of every shim below, as the
  // heartbeats carry it (the overlay's clock), and its reset for a new attempt.
  virtual double SubtreeOutput() const = 0;
  virtual void ResetOutput(double now) = 0;
  // How stale the subtree's output may look at rank 0 through the tree's
  // heartbeats (a beat per level): added to --hang-timeout.
  virtual double HangSlackS() const = 0;
  virtual bool ChildrenAllDone() const = 0;    // every child shim left in order
  virtual bool ChildrenLinked() const = 0;     // some child shim is still linked
  virtual bool Flushed() const = 0;            // nothing waits to be sent
  virtual bool ParentClosed() const = 0;       // the parent closed its link
  virtual double WallNow() const = 0;          // CLOCK_REALTIME
  virtual int FreePort() const = 0;            // the next attempt's MASTER_PORT
  // --warm-restart: the next attempt's store opened on `port` before any
  // rank starts (this shim's store host: launch/store_host.h); false: rank
  // 0 hosts it, as without it.
  virtual bool HostStore(int port) {
    (void)port;
    return false;
  }
  // The root: the shims below `shim` in the tree (cut off when it is lost).
  virtual std::vector<int> Below(int shim) const = 0;
  // --spares, the root (job_heir.cc): names one of its child shims its heir
  // and tells every child which (-1: none can be), and sends a frame to
  // that one child alone.
  virtual int NameHeir() { return -1; }
  // The tree as the join made it: each shim's parent (-1: the root's), or
  // empty where this shim does not know it.
  virtual std::vector<int> Parents() const { return {}; }
  virtual void SendTo(int shim, const std::string& frame) { (void)shim, (void)frame; }
};

bool LeavesInOrder(const Msg& m);
// The stop a lost shim (or a part cut off) gives: exit 125, and `what`.
Msg LostStop(const std::string& what);

class JobMachine {
 public:
  JobMachine(const JobConfig& c, JobPorts* ports);

  // The job started (rank 0 said go) at `now` (the overlay's clock).
  void Start(double now);
  // Rank 0: the host each shim named as it joined (for the roll-call), and
  // the address it joined from (NODE_RANK 0's, should it move there).
  void NoteHost(int shim, const std::string& host, const std::string& addr = "") {
    shim_hosts_[shim] = host;
    if (!addr.empty()) shim_addrs_[shim] = addr;
  }

  // This node's events.
  void OnChildFailed(const LocalFailure& f, double now);
  void OnStacks(const std::vector<RankStack>& stacks, double now);
  // The flight records this node's ranks gave when a failure halted them.
  void OnRecords(const std::vector<RankRecord>& records, double now);
  void OnChildrenDone(const NodeOutcome& o, double now);
  // --warm-restart: this node's ranks of a restart started, `warm` of them
  // from their standbys and `cold` not: said to rank 0, which sums the job's.
  void OnWarmStarts(int warm, int cold, double now);
  void OnShimSignalled(int sig, const std::string& why, double now);
  // The overlay's: a frame from a child shim, or from the parent (beats and
  // the join's words stay in the overlay). Before it hands one on, the
  // overlay marks a link whose frame LeavesInOrder as closed in order: a
  // child that is done or gone is not a loss, a parent that said bye is
  // sent nothing more.
  void OnFromChild(const std::string& frame, const Msg& m, double now);
  void OnFromParent(const std::string& frame, const Msg& m, double now);
  // A shim below was lost (`what` says which and why; `may_live`: its link
  // fell silent, or it said it left this shim for the root's heir, rather
  // than closed with its process); the link to the parent was lost (`what`
  // too: this node's one line; `record`: the root and its heir were lost
  // together, and this shim, a child of the root, writes why the job ended
  // into failure.json, unless a shim of the same run wrote first).
  void OnShimLost(int shim, const std::string& what, bool may_live, double now);
  void OnParentLost(const std::string& what, double now, bool record = false);

  // --spares: a new root (job_heir.cc, docs/control-plane.md "A new root").
  // The root's record reached its heir; the overlay asks whether the loss
  // of its parent, the root, may be survived (`as_heir`: this shim is the
  // heir), and then says it happened: this shim is the heir, or it linked
  // to the heir; `silent`: the root's link fell silent (it may live on the
  // other side of a cut) rather than closed.
  void OnRecord(const std::string& frame) { election_.Record(frame); }
  // The root's word that shims were lost since its record ("gone"): the
  // heir retires them too should it take the job.
  void OnGone(const std::string& frame) { election_.Gone(frame); }
  bool MayTakeOver(bool as_heir) const;
  // `was_heir`: the heir moved below the root's successor (its own link to
  // the root failed while the successor heard it): it hands it its place.
  void OnRootLost(bool as_heir, bool silent, const std::string& what, double now,
                  bool was_heir = false);
  // The heir's side: the root's record and the losses it said since.
  const Election& election() const { return election_; }
  bool root() const { return root_; }
  // The root's term this shim knows of (1: rank 0's shim; a heir that takes
  // the job holds its record's term and one), and the stamp of what it
  // writes into --log-dir: it holds the job while it is the root and has
  // not lost the majority (launch/record_fence.h).
  int term() const { return term_; }
  // More than half of the job's shims lost (a root's view: it holds the
  // job no more).
  bool LostMajority() const;
  RecordStamp Stamp() const {
    return RecordStamp{term_, c_.rank, ShimName(c_.rank, c_.host), root_ && !lost_job_};
  }
  // The root: the child it named its heir (-1: none).
  int heir() const { return heir_; }
  // The root: `shim`, a child that lost it, linked to `parent` (a child of
  // its own, the heir) and stays in the job below it (the tree repaired);
  // its heir so moved below the successor: the heir is named anew.
  void NoteMoved(int shim, int parent);
  // The root: its heir fell silent, awaited below the successor (HeirWatch).
  void NoteHeirSilent(double now) { heirs_.Silent(now); }
  // The root: its heir found it lost (it said "left": a frozen or
  // descheduled root that wakes, or one whose link to the heir came back)
  // and holds the job's election: this shim ends its part with 125 and
  // writes nothing about the job (`why`: the line it prints).
  void StepDown(const std::string& why, double now);
  // The heir, electing: a child of the root that linked to it before it
  // found the root lost itself counts in the election (job_heir.cc).
  void NoteOrphan(int shim, bool silent, double now, bool ask);

  double NextDeadline(double now) const;  // now + 3600 when nothing waits
  void OnTimer(double now);

  bool MayExit(double now) const;
  bool PrintsOwnFailure() const { return root_ || cut_off_; }
  std::optional<LinkOrder> TakeOrder();

  JobState state() const { return state_; }
  // Moves into a state that job_states.cc's table lacks ("from -> to").
  const std::vector<std::string>& stray_moves() const { return stray_moves_; }
  int restarts() const { return attempts_.restarts(); }
  // With --spares: this shim's NODE_RANK in the attempt under way (-1: it
  // waits), and rank 0's roster.
  int node() const { return node_; }
  const Roster* roster() const { return roster_ ? &*roster_ : nullptr; }

  // The straggler check (job_pace.cc, docs/control-plane.md "Slow nodes"):
  // the overlay's order for this node to look, and at the root, each look's
  // merged sample to judge.
  void OrderPaceLook(int64_t look);
  void OnPaceSample(const PaceSample& s, double now);
  // The straggler check (straggler_check.h): its looks and judge.
  StragglerCheck& straggler() { return straggler_; }
  const StragglerCheck& straggler() const { return straggler_; }
  std::string HostName(int shim) const { return HostOf(shim); }

 private:
  struct FailNote {
    double wall_time = 0;
    int rank = 0, node = 0, code = 0, shim = -1;
    std::string host, status, summary, json;
    bool local = false;
    std::string lost;  // a node lost (with --spares): the loss, not a rank's failure
  };

  void Enter(JobState s, double now);
  bool Over() const { return state_ == JobState::kStopped || state_ == JobState::kSignalled; }
  bool Busy() const;  // collecting, ending or backing off: failures wait for the round

  // Every shim.
  void Stop(StopOrder own, double now);
  void OnBye(const std::string& frame, const Msg& m, double now);
  void MaybeSendDone(double now);
  void MaybeSendEnded(double now);
  void ResetRound(double now);
  std::string StopLine(const Msg& stop) const;
  // --spares (job_spares.cc).
  bool Spares() const { return c_.spares > 0; }
  void MaybeSendWell(double now);
  void NoteWell(int shim, double now);
  void OnFinish(double now);
  void RetireLost(int shim, const std::string& what, double now);
  std::string LostReason(int lost, int s, const std::string& what) const;
  void NoteStreak(const FailNote& first, double now);
  void NoteCulprit(const std::optional<Culprit>& c, double now);
  void NoteRas(const std::string& line);
  std::vector<std::string> ras_lines_;  // the roll-call's NCCL RAS lines
  // The hang being judged (FinishCollect), for a stop that comes of its
  // culprit's retirement.
  std::optional<AttemptRecord> hang_attempt_;
  bool RetireOrStop(int shim, const std::string& reason, double now);
  void StopNoSpare(const std::string& why, double now);
  void StopNoMajority(const std::string& why, const std::string& holder, double now);
  bool HeirLostAlive(double now) const;
  bool Counted(int shim) const { return !gone_.count(shim); }
  // The attempt under way, or (backing off) the one that just ended: a
  // node retired then was retired in it.
  int Attempt() const {
    return state_ == JobState::kBackingOff ? attempts_.restarts() : attempts_.restarts() + 1;
  }
  bool AllIn(const std::set<int>& heard) const;
  void RecheckRound(double now);
  std::string RosterLines(const std::vector<int>& before) const;
  std::string HostOf(int shim) const;
  StragglerCheck::HostOf HostFn() const {
    return [this](int shim) { return HostOf(shim); };
  }
  void NoteAttemptNodes();

  // A new root (job_heir.cc).
  void NameHeir();
  void SendRecord();
  std::string RecordFrame(bool lean) const;
  bool LoadRecord(const std::string& what);
  void CheckTakeover(double now);
  void FinishTakeover(double now);
  std::string MajorityText(int reached) const;
  StopOrder HeirStop(JobState in, int code, std::string line);
  bool HeldByHeir() const { return root_ && election_.lost_root() >= 0; }
  std::vector<int> BelowOf(int shim) const;
  double ElectionDeadline() const;

  // Rank 0's decisions.
  void NoteFailure(FailNote f, double now);
  const FailNote& EarliestFailure() const;
  AttemptRecord FailedAttempt(const FailNote& first) const;
  void DecideFailure(double now);
  void StopAsLost(const std::string& what, double now);
  void StopJob(const Msg& stop, StopOrder own, double now);
  std::vector<std::string> ShimsNotIn(const std::set<int>& heard) const;
  double HangAt() const;
  // When the wait of the state this shim is in ends (infinity for a state
  // that waits on no clock): the one sum NextDeadline sets and OnTimer
  // acts on, so that the two cannot round apart (aml-plane-sim, seed 264).
  double StateDeadline() const;
  void StartCollect(double now);
  void NoteStacks(const Msg& m, double now);
  void NoteRecords(const Msg& m, double now);
  bool AwaitsRecords() const;
  void DecideBeforeLoss(double now);
  double VerdictWait() const;
  void FinishCollect(double now);
  void EndAttempt(AttemptRecord a, const Msg& stop, StopOrder own, std::string message,
                  bool print_own, double now);
  void RecordAttempts(StopOrder* own, const std::string& why_not) const;
  void FinalStop(const std::string& stop, StopOrder own, const std::string& why_not, double now);
  void NoteEnded(int shim, double first_output_wall, const std::string& unfit, double now);
  void NoteWarm(int shim, int warm, int cold);
  void NoteUnfit(int shim, const std::string& what, double now);
  void SendRestart(double now);

  JobConfig c_;
  JobPorts* ports_;
  JobState state_ = JobState::kRunning;
  std::vector<std::string> stray_moves_;  // stray_moves()
  double entered_ = 0;          // when state_ began
  std::deque<LinkOrder> orders_;  // TakeOrder's, in order
  // Queues an order for this node (built in place: GCC 12 misreads a moved
  // variant's strings as uninitialized).
  template <class O>
  void Order(O order) {
    orders_.emplace_back(std::in_place_type<O>, std::move(order));
  }
  // Facts of the attempt under way.
  bool children_done_ = false;  // this node's ranks all ended
  NodeOutcome outcome_;         // and how
  double failed_at_ = 0;        // this node's first failure
  std::optional<Msg> own_failure_;  // and its stop, should no verdict come
  bool ended_sent_ = false;     // ending: this shim said its ranks ended
  // This attempt's words sent up, its own and those it passed on from below
  // (a failure, "well"): said again below the heir after a relink, since a
  // cut link may have lost them on the way (JobMachine::OnRootLost; "ended"
  // is said anew).
  std::vector<std::string> said_up_;
  void SayUp(std::string frame) {  // sent up, and kept in said_up_
    said_up_.push_back(std::move(frame));
    ports_->SendUp(said_up_.back());
  }
  bool checking_ = false;       // and its node's check runs still
  int done_below_ = 0;          // shims below that ended well ("done")
  bool own_done_well_ = false;  // rank 0: its own ranks ended well
  bool cut_off_ = false;        // the parent's link was lost, or it left
  bool lost_below_ = false;     // a shim below was lost: this part cannot end well
  double stop_at_ = 0;          // stopped or signalled at
  JobState signalled_in_ = JobState::kRunning;  // the state a signal came in
  // --spares: this shim's NODE_RANK (-1: waits); the job ended well (rank 0
  // said "finish": every NODE_RANK's ranks ended with 0); this shim said so.
  int node_ = 0;
  bool finished_ = false, well_sent_ = false;
  // The root (rank 0's shim, or the heir that took its place).
  bool root_ = false;
  int term_ = 1;                // term()
  int record_term_ = 1;         // the heir: its root's record's term
  bool lost_job_ = false;       // the root lost the majority: it writes no record
  int heir_ = -1;               // the child it named its heir
  // The root: the heirs it named, and those lost alive (election.h).
  HeirWatch heirs_;
  // The heir: the root's record, and its election (election.h).
  Election election_;
  std::vector<int> parents_;    // a new root: the tree (each shim's parent)
  std::map<int, std::string> shim_hosts_, shim_addrs_;
  std::optional<Roster> roster_;
  std::set<int> well_;         // shims whose NODE_RANK's ranks ended well
  std::set<int> gone_;         // lost (or cut off with one): they say nothing more
  bool replaced_ = false;      // a NODE_RANK of this attempt was retired
  std::vector<FailNote> fails_;
  double hang_silent_s_ = 0;
  std::vector<RankReport> reports_;
  std::set<int> reported_;
  // A failure's: each shim's ranks' flight records (rank 0), once asked.
  FailureRecords records_;
  // The attempts so far, the one under way, and the restart round (the
  // root's; every other shim keeps the count).
  Attempts attempts_;
  // The straggler check (its looks, and at the root its judge), and
  // --retire-slow (job_pace.cc).
  StragglerCheck straggler_;
  void RetireSlow(const SlowNode& n, double now);
};

// The fixed waits of the states (docs/control-plane.md has the table).
constexpr double kFailWindowS = 0.1;    // deciding: failures that count as first
constexpr double kRecordsSlackS = 2;     // deciding: past --dump-timeout, for a failure's records
constexpr double kVerdictWaitS = 5;     // failed: a failing node waits for rank 0's word
constexpr double kFlushS = 1;           // last words before exit
constexpr double kCollectS = 20;        // collecting at rank 0 (readers 10 s, SIGABRT 5 s)
constexpr double kStopWaitS = 30;       // collecting elsewhere: rank 0's word after the stacks
                                        // (both past --dump-timeout when records are asked for)
constexpr double kEndingS = 30;         // ending: past --grace, for every shim to end its ranks
constexpr double kCheckPollS = 0.1;     // ending: a node's check that takes a while, asked again

}  // namespace aml
