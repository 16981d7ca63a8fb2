// The node's supervisor as a state machine (docs/supervision.md, "The
// supervisor's states"): this node's ranks, one attempt at a time, from
// their start to their end, the job's orders (stacks, end, restart, stop)
// and the launcher's signals. It knows nothing of processes or clocks: its
// process table (NodeProcs) starts, signals and watches the ranks, and every
// call is given the time; the supervisor (supervisor.h) is that table over
// real processes, the simulator's (shim/sim) over simulated ones, so both
// run this machine. Like the job's (shim/control/job_machine.h), one state
// at a time, each with its deadline:
//
//   starting     the attempt's ranks are being started
//   running      they run; nothing is being ended
//   collecting   the job was judged hung: the ranks' stacks are read (exits
//                are expected, not failures)
//   terminating  SIGTERM went to every rank's group: --grace for them to end
//   killing      SIGKILL went to those left: 5 s for them to be reaped
//   draining     every rank was reaped: what they left (processes holding
//                the output pipes, orphans) is ended, within min(--grace, 2 s)
//   ended        the attempt is over here; the job decides: a restart, or leave
//   restarting   a restart was ordered: the ended ranks' groups empty first (5 s)
//   done         nothing more is owed: the supervisor returns
//
// The straggler check's looks (--straggler-check, rank 0's order, every
// node at once) read the same records whatever the output, and give each
// rank's entry times to the job (docs/control-plane.md, "Slow nodes").
//
// While the ranks run and write nothing, the node looks at their flight
// records every `look_every_s` (--hang-timeout / 3, with the recorder):
// a rank that completed a collective since the last look is activity, as
// output is, so a silent job whose collectives advance is not judged hung
// (docs/control-plane.md, "Naming the culprit"). Before a rank has a
// process group (it imports, prepares data, compiles: no flight-recorder
// pipe yet), or with its recorder before a look saw it enter a collective,
// the CPU time it spent (5 % of a core at least) is activity too, for the
// attempt's first kStartCpuLooks looks' time (10 x --hang-timeout): a
// quiet start-up on a busy node is not a hang (docs/control-plane.md, "Hang
// watchdog"). That CPU time is read every look_every_s on its own, not
// with a look's records: a look whose dumps come late (an agent that got
// no core in time, up to --dump-timeout) must not leave a busy start-up
// silent for --hang-timeout (found in CI beside CPU hogs).
//
// A failure (a rank of this node's, or another's: the job's halt) ends
// the attempt; with the flight recorder, the ranks still running are first
// asked for their records (--dump-timeout at most: the teardown waits,
// in state terminating), which say where each waited; then SIGTERM. A stop,
// an end or a signal that comes meanwhile cuts the wait short.
//
// With --warm-restart (NodeConfig::warm) it also decides each rank's
// standby interpreter (launch/warm_slots.h): made as each attempt's ranks
// start, taken by the rank at a restart (or not, and why), ended when the
// node is retired, when the shim is being stopped and at its end; its
// process table makes and ends them (docs/control-plane.md, "Warm
// restarts").
//
// Beside the state, the stacks asked for (a hang's roll-call) go through
// their own phases: none, dumping (each rank's flight record, --dump-timeout
// at most: launch/flight/fr_harvest.h), probing (readers from outside,
// 10 s), aborting (SIGABRT to each rank, 5 s for its dump), sent; a stop or
// a signal that comes meanwhile ends the ranks while the stacks are still
// sent.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/job_link.h"
#include "launch/warm_slots.h"

namespace aml {

enum class NodeState {
  kStarting, kRunning, kCollecting, kTerminating, kKilling, kDraining, kEnded, kRestarting, kDone
};
const char* NodeStateName(NodeState s);
enum class StackPhase { kNone, kDumping, kProbing, kAborting, kSent };

// What came of a StartDumps (NodeProcs::Dumps).
struct DumpResult {
  // kRecords: each rank's record as it came (one per rank that ran).
  std::vector<RankRecord> records;
  // kLook: every group's last completed collective, summed over the ranks
  // that answered, how many did, and each rank's entry times (the
  // straggler check).
  int64_t progress = 0;
  int answered = 0;
  std::vector<RankTimes> times;
};

// --warm-restart: how a restart's rank is to start (NodeProcs::Start). In:
// from its standby (WarmSlots::Take found one live); out: false, with why,
// when the standby refused its order (it was ended: the rank started cold).
struct WarmStart {
  bool from_standby = false;
  std::string cold;
};

// What the machine needs of the processes it supervises (index: the rank's
// place in this node's list).
class NodeProcs {
 public:
  virtual ~NodeProcs() = default;
  // Starts rank `child` of an attempt (`restart`: the order of a restart,
  // null for the first; `warm`: with --warm-restart, at a restart, whether
  // its standby is to run it, null otherwise). False when it cannot:
  // `*code` is aml-shim's exit code for it (125, 126, 127), said already.
  virtual bool Start(size_t child, const RestartOrder* restart, WarmStart* warm, int* code) = 0;
  // --warm-restart (NodeConfig::warm; launch/warm_slots.h): rank `child`'s
  // standby interpreter: make it ("" when made, else why not); end it. One
  // that ends by itself: NodeMachine::OnStandbyGone.
  virtual std::string MakeStandby(size_t child) {
    (void)child;
    return "no standby can be made here";
  }
  virtual void EndStandby(size_t child) { (void)child; }
  // `sig` to a running rank's process group (and to the rank itself when it
  // left its group; a terminating signal is followed by SIGCONT).
  virtual void Signal(size_t child, int sig) = 0;
  // SIGABRT to the rank itself (Python's faulthandler dumps its stack).
  virtual void Abort(size_t child) = 0;
  // The processes the ranks left behind: signalled, true when there are any.
  virtual bool SignalStragglers(int sig) = 0;
  virtual bool StragglersLeft() = 0;
  // A rank's output is still being read (a pipe held open by what it left).
  virtual bool OutputOpen() const = 0;
  // The process groups of ended ranks are empty; SIGKILL to those that are not.
  virtual bool GroupsEmpty() = 0;
  virtual void KillGroups() = 0;
  // The running ranks' flight records (PyTorch's recent collectives), one
  // port for every use: asked for (StartDumps), then looked for until every
  // one came or --dump-timeout passed (DumpsDone; DumpsNext: when to look
  // again), then what came (Dumps), in the form the ask wants.
  // kVerdict: a hang's (NCCL's RAS socket is asked too; they come with the
  // stacks: Stacks()); kRecords: a failure's; kLook: a look (progress, the
  // straggler check), which needs no stack traces (flight/fr_harvest.h).
  enum class DumpAsk { kVerdict, kRecords, kLook };
  virtual void StartDumps(double now, DumpAsk ask) = 0;
  virtual bool DumpsDone(double now) = 0;
  // Every rank asked has ended: the last look, and what is still waited
  // for is settled with what came (FlightHarvest::Settle).
  virtual void DumpsEnded(double now) { DumpsDone(now); }
  virtual double DumpsNext(double now) const = 0;
  virtual DumpResult Dumps() = 0;
  // The CPU seconds spent so far by each running rank that is still
  // starting (no process group yet, or no collective entered that a record
  // showed), by its child index; none when no rank is (the simulator's
  // ranks never are).
  struct RankCpu {
    size_t child = 0;
    double cpu_s = 0;
  };
  virtual std::vector<RankCpu> StartingCpu() const { return {}; }
  // The stack readers from outside (py-spy, gdb) for the running ranks.
  virtual void StartProbe() = 0;
  virtual bool ProbeRunning() const = 0;
  virtual bool ProbeDone(double now) = 0;
  virtual double ProbeDeadline() const = 0;
  virtual void FinishProbe() = 0;
  // What the job hears of this node: its first failure, its ranks' stacks,
  // when they first wrote.
  virtual LocalFailure Failure(size_t child) = 0;
  virtual std::vector<RankStack> Stacks() = 0;
  virtual double FirstOutputWall() const = 0;
  // The keeper knows whether the ranks were sent SIGTERM.
  virtual void TermSent(bool sent) = 0;
  // Before a restart's ranks start: its words, the logs, the error files.
  virtual void BeginRestart(const RestartOrder& restart, bool print_own_failure) = 0;
};

struct NodeConfig {
  size_t children = 0;
  double grace_s = 30;  // --grace
  // --spares: this node starts no ranks in the first attempt (a spare); a
  // restart order with a roster says whether it does in the next.
  bool standby = false;
  // The ranks' flight records looked at every this long while they write
  // nothing (0: never).
  double look_every_s = 0;
  // A failure (this node's rank's, or a halt) takes the running ranks'
  // flight records before it ends them: the recorder is on.
  bool records_on_failure = false;
  // --warm-restart: each rank keeps a standby interpreter for the next
  // restart (launch/warm_slots.h); `warm_late`: made kAfterS after their
  // rank's start, not at once in the idle class (launch/idle_class.h).
  bool warm = false;
  bool warm_late = false;
};

class NodeMachine {
 public:
  static constexpr double kAfterKillS = 5;       // after SIGKILL, before giving up
  static constexpr double kDrainS = 2;           // what the ranks left, at most (and --grace)
  static constexpr double kDrainAfterKillS = 1;  // and in a teardown, past the ranks' --grace
  static constexpr double kCollectS = 5;         // SIGABRT until the dumps are read
  static constexpr double kSameRequestS = 0.1;   // a signal twice within this is one request
  // A starting rank's CPU time counts as activity for this many looks'
  // time from the attempt's start (each --hang-timeout / 3), when the
  // starting ranks' CPU time grew by kStartCpuShare of the time between two
  // readings (a rank that imports or prepares data keeps a core busy; one
  // that waits, a few threads idle).
  static constexpr double kStartCpuLooks = 30;
  static constexpr double kStartCpuShare = 0.05;

  // `job`: the control plane (or the simulator's), null for a node alone.
  NodeMachine(const NodeConfig& c, NodeProcs* procs, JobChannel* job);

  // Starts the first attempt.
  void Start(double now);
  // A rank was reaped with `status` (a wait status).
  void OnExit(size_t child, int status, double now);
  // A signal aml-shim forwards (`sender`: the pid that sent it, 0 for the
  // kernel); a terminating one stops the job, a second one hurries it.
  void OnSignal(int sig, pid_t sender, double now);
  // The launcher is gone without a word (its lifeline broke): as its SIGTERM.
  void OnLauncherGone(const std::string& what, double now);
  // stdout's reader left (EPIPE): the job ends, as a pipeline's writer would.
  void OnReaderGone(double now);
  // Nothing sensible is left to wait for (the loop's poll failed).
  void OnFatal(double now);
  // The job's orders, taken from the channel.
  void TakeOrders(double now);
  // --warm-restart: rank `child`'s standby ended by itself (`why`): its next
  // start is cold.
  void OnStandbyGone(size_t child, const std::string& why) { warm_.Gone(child, why); }
  // The ranks wrote output (looks wait for its silence).
  void NoteOutput(double now) { last_output_ = now; }
  double last_output() const { return last_output_; }
  bool looking() const { return looking_; }
  int64_t pace_looks() const { return pace_looks_; }
  // Deadlines and endings; false when the supervisor may return.
  bool Step(double now);
  double NextDeadline(double now) const;  // now + 3600 when nothing waits

  NodeState state() const { return state_; }
  StackPhase stacks() const { return stacks_; }
  int restarts() const { return restarts_; }
  bool standby() const { return standby_; }
  bool hurry() const { return hurry_; }
  // The end: aml-shim's exit code, and the facts its report prints.
  int ExitCode() const;
  int spawn_failure_code() const { return spawn_failure_code_; }
  const std::optional<StopOrder>& stop() const { return stop_; }
  std::optional<size_t> first_failure() const { return first_failure_; }
  std::optional<size_t> first_stopped() const { return first_stopped_; }
  int shim_signal() const { return shim_signal_; }
  bool launcher_gone() const { return launcher_gone_; }
  bool reader_gone() const { return reader_gone_; }
  double ended_at() const { return ended_at_; }  // the last rank's end (0: running)
  // Each rank of the attempt.
  bool running(size_t i) const { return ranks_[i].running; }
  int status(size_t i) const { return ranks_[i].status; }
  double started(size_t i) const { return ranks_[i].start; }
  double ended(size_t i) const { return ranks_[i].end; }
  bool ended_before_collect(size_t i) const { return ranks_[i].ended_before_collect; }
  bool AnyRunning() const;
  // --warm-restart: the last restart's ranks here started from their
  // standbys, and cold (with why); empty before a restart.
  const std::vector<size_t>& warm_started() const { return warm_started_; }
  const std::vector<std::pair<size_t, std::string>>& cold_started() const { return cold_started_; }
  // The records a failure took (a node alone prints where its ranks waited).
  const std::vector<RankRecord>& records() const { return records_; }
  bool recording() const { return recording_; }

 private:
  struct Rank {
    bool running = false;  // started and not yet reaped
    int status = 0;
    double start = 0, end = 0;
    bool ended_before_collect = false;  // had ended when the stacks were asked for
  };
  void Enter(NodeState s);
  // --warm-restart (node_machine_warm.cc).
  bool StartRank(size_t i, const RestartOrder* restart, double now, int* code);
  void StandbysAfterStart(bool restart, double now);
  void MakeStandbys(double now);
  void EndStandbys();
  // One order of each kind (TakeOrders).
  void Take(CollectStacksOrder order, double now);
  void Take(EndAttemptOrder order, double now);
  void Take(RestartOrder order, double now);
  void Take(PaceLookOrder order, double now);
  void Take(StopOrder order, double now);
  bool StartAll(const RestartOrder* restart, double now);
  void KillAll(int sig);
  void BeginTeardown(double now);
  void BeginFailureTeardown(double now);
  void FinishRecords(double now);
  void SendRecords(std::vector<RankRecord> records);
  void StopRequested(int sig, pid_t sender, double now, const std::string& why);
  void CollectStacks(double now);
  // Looks while the ranks write nothing (node_machine_looks.cc).
  double NextLook() const;
  void Look(double now);
  double NextCpuLook() const;
  void CpuLook(double now);
  void PaceLook(int64_t look, double now);
  // `times`: the look's entry times (null: none read).
  void AnswerPace(const std::vector<RankTimes>* times);
  void ProbeStacks(double now);
  void AbortForStacks(double now);
  void SendStacks(double now);
  bool Finished(double now);
  // A roll-call's stacks not yet sent, and (in a teardown) --grace not over.
  bool WaitsForStacks(double now) const;
  bool Restart(double now);

  NodeConfig c_;
  NodeProcs* procs_;
  JobChannel* job_;
  NodeState state_ = NodeState::kStarting;
  StackPhase stacks_ = StackPhase::kNone;
  std::vector<Rank> ranks_;
  // The attempt under way.
  std::optional<size_t> first_failure_;  // failed before any teardown began
  std::optional<size_t> first_stopped_;  // failed after aml-shim was signalled
  bool teardown_ = false;
  double kill_at_ = 0;       // terminating: SIGKILL then
  double give_up_at_ = 0;    // killing: give up then
  double drain_until_ = 0;   // draining: SIGKILL to what is left then
  double ended_at_ = 0;      // the last rank ended
  bool stragglers_left_ = false;
  double collect_until_ = 0; // aborting: the dumps' deadline
  bool told_done_ = false;   // the job knows this node's ranks ended
  // The job.
  int spawn_failure_code_ = 0;
  int shim_signal_ = 0;      // the terminating signal aml-shim received
  pid_t shim_signal_sender_ = 0;
  double shim_signal_at_ = 0;
  bool hurry_ = false;       // a second signal: no more waiting
  bool launcher_gone_ = false, reader_gone_ = false;
  std::optional<StopOrder> stop_;            // the job was stopped by the control plane
  std::optional<RestartOrder> restart_;      // ordered, once the groups are empty
  std::optional<EndAttemptOrder> end_next_;  // and the end of the attempt it starts
  double restart_wait_until_ = 0;
  int restarts_ = 0;
  bool standby_ = false;     // this attempt starts no ranks here (--spares)
  bool retired_ = false;     // it ran ranks, and was retired (none start again)
  // Looks at the ranks' flight records while they write nothing.
  double last_output_ = 0;    // their last output (or the attempt's start)
  double last_look_ = 0;      // the last look's start
  bool looking_ = false;      // a look's dumps asked for
  int64_t last_progress_ = -1;  // what the last look summed (-1: none yet)
  double attempt_start_ = 0;     // the attempt's ranks started
  // The starting ranks' CPU time as last read (by child; -1: not starting
  // then), and when; none starting at a reading: no more readings.
  std::vector<double> starting_cpu_;
  double starting_at_ = 0;
  // The straggler check's look asked for (-1: none): answered when the
  // look under way is done (or overtaken: then with nothing).
  int64_t pace_look_ = -1;
  int64_t pace_looks_ = 0;  // answered with times
  // A failure's records: being taken (the teardown waits), sent.
  bool recording_ = false, records_sent_ = false;
  std::vector<RankRecord> records_;
  // --warm-restart.
  WarmSlots warm_;
  std::vector<size_t> warm_started_;
  std::vector<std::pair<size_t, std::string>> cold_started_;
};

}  // namespace aml
