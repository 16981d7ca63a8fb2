// The supervisor's process table, shared by its four files (internal to
// launch/): supervisor.cc (the loop, starting and reaping, signals, the
// restart), supervisor_stacks.cc (a hang's stacks, the flight records, the
// metrics), supervisor_output.cc (the ranks' output streams) and
// supervisor_report.cc (each child's end, the failure report). Supervise
// (supervisor.h) is the one entry.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "launch/child.h"
#include "launch/cpu_affinity.h"
#include "launch/descendants.h"
#include "launch/error_file.h"
#include "launch/failure_report.h"
#include "launch/flight/fr_env.h"
#include "launch/flight/fr_harvest.h"
#include "launch/flight/nccl_ras.h"
#include "launch/flight/waited.h"
#include "launch/idle_class.h"
#include "launch/keeper.h"
#include "launch/tagged_procs.h"
#include "launch/line_tagger.h"
#include "launch/log_dir.h"
#include "launch/node_machine.h"
#include "launch/warm_check.h"
#include "launch/store_host.h"
#include "launch/warm_pool.h"
#include "launch/output_sink.h"
#include "launch/restart_policy.h"
#include "launch/stack_dump.h"
#include "launch/stack_probe.h"
#include "launch/supervisor.h"
#include "launch/wait_status.h"
#include "shim/base/clock.h"
#include "shim/base/exit_code.h"
#include "shim/base/log.h"
#include "shim/base/proc_tree.h"
#include "shim/base/read_no_follow.h"
#include "shim/base/units.h"
#include "shim/base/version.h"

namespace aml {
namespace supervise {

inline constexpr size_t kMaxLine = 64 * 1024;        // longer lines are cut
inline constexpr double kPartialFlushS = 1.0;        // a held partial line waits at most this
inline constexpr size_t kTailBytes = 16 * 1024;      // stderr kept for the summary
inline constexpr size_t kQueueCap = 4 << 20;         // output queued for a slow reader
inline constexpr ssize_t kDefaultPipe = 64 << 10;    // a pipe's size, unless enlarged
inline constexpr int kLargePipe = 1 << 20;           // a chatty rank's
inline constexpr double kFinalFlushS = 5.0;          // the reader's last chance at the end
inline constexpr double kKeeperGraceS = 10.0;        // SIGTERM to SIGKILL when the shim died
inline constexpr double kProbeS = 10.0;  // every stack reader at once (py-spy, gdb)
inline constexpr double kRasTimeoutS = 5;  // NCCL's RAS socket, asked at a hang
inline constexpr double kStandbyEndS = 10.0;  // killed standbys reaped before the shim's exit
inline constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

inline double Now() { return MonotonicSeconds(); }
// ppoll's timeout for `seconds` (none below 0).
timespec Timeout(double seconds);
// The process groups of `groups` found empty (no member left, the leader
// reaped), taken out of it: a group id is not recycled before.
std::vector<pid_t> TakeEmptyGroups(std::vector<pid_t>* groups);

extern OutputSink* g_err_sink;  // aml-shim's own lines while supervising (supervisor.cc)

struct Stream {
  int fd = -1;
  OutputSink* sink = nullptr;
  bool is_stderr = false;
  size_t child = 0;  // index of its child (and of its log files)
  std::unique_ptr<LineTagger> tagger;  // set with fd (tagged or not: whole lines)
  double partial_since = 0;
  std::string* tail = nullptr;  // stderr only
  bool enlarged = false;        // its pipe was made kLargePipe

  void KeepTail(std::string_view data) {
    if (!tail) return;
    tail->append(data);
    if (tail->size() > 2 * kTailBytes) tail->erase(0, tail->size() - kTailBytes);
  }
};

// A child's process and output; its life (running, status, times) is the
// machine's (node_machine.h).
struct Child {
  const ChildLaunch* launch = nullptr;  // launches_'s
  pid_t pid = -1;
  Stream out, err;
  std::string err_tail;
  ProbedStack probed;  // py-spy's or the native stack, if any
  std::optional<FlightFiles> fr;  // its flight recorder's pipe and dump (none: off)
  // The most collectives any of its groups entered, in the records its
  // looks read (-1: none read yet): 0 or less, it is still starting.
  int64_t entered = -1;
};

// The process table of the node's machine (node_machine.h) over real
// processes: the one spawn site, signals to process groups, reaping, the
// keeper, the ranks' output and their stacks. The machine decides; this
// loop waits in ppoll and tells it what happened.
class Supervisor : private NodeProcs {
 public:
  explicit Supervisor(const SupervisorConfig& c)
      : config_(c),
        out_sink_(STDOUT_FILENO, kQueueCap),
        err_sink_(STDERR_FILENO, kQueueCap),
        launches_(c.children),
        node_rank_(c.standby ? -1 : c.node_rank),
        machine_(NodeConfig{c.children.size(), c.grace_s, c.standby, c.look_every_s,
                            c.flight_recorder, WarmOn(c),
                            WarmOn(c) && !WhyNotLeaveIdleClass().empty()},
                 this, c.link) {}
  int Run();

 private:
  int Prepare();
  void Loop();
  void Poll(double now);
  void Reap();
  void OnExit(size_t i, int status, double now);
  void CopyErrorFile(int rank);
  void ForgetEmptyGroups();
  void NoticeStopped();
  void Signal(int sig, pid_t sender);
  void ReadSignals();
  void LauncherGone();
  void ReadStream(Stream& s, double now);
  void NoteOutput(double now);  // the ranks' output seen: to the watchdog and the job
  void Emit(Stream& s, std::string_view data);
  void CloseStream(Stream& s);
  void FlushStaleParts(double now);
  void CheckSinks(double now);
  double NextDeadline(double now) const;
  bool AnyOpenStream() const;
  std::optional<size_t> Find(pid_t pid) const;
  int Finish();
  ChildOutcome Outcome(size_t i) const;
  // --warm-restart (supervisor_warm.cc).
  Status PrepareWarm(const Status& agent);
  void StartStoreHost();
  // --warm-restart's standbys for these children: not for a node's
  // launcher, nor for a command that is not a Python script or module (it
  // restarts cold, said once: WarmPool::Set).
  static bool WarmOn(const SupervisorConfig& c) {
    return c.warm_restart && !c.children.empty() && !c.children[0].node_launcher &&
           ParsePythonCommand(c.children[0].argv).ok();
  }
  std::optional<SpawnedChild> TakeStandby(size_t i, const EnvSets& sets, WarmStart* w);
  std::string WarmRestartJson() const;
  void EndStandbys();
  void Report();
  void DrainStderr(Child& c);
  void FlushAtExit();
  void WatchStarted();
  void KeepFlightRecord(RankStack* r);
  void KeepDump(const FlightHarvest::Outcome& o);
  std::string MetricsText() const;
  std::vector<pid_t> NotStragglers() const;

  // NodeProcs.
  bool Start(size_t child, const RestartOrder* restart, WarmStart* warm, int* code) override;
  std::string MakeStandby(size_t child) override;
  void EndStandby(size_t child) override { warm_.End(child); }
  void Signal(size_t child, int sig) override;
  void Abort(size_t child) override;
  bool SignalStragglers(int sig) override;
  bool StragglersLeft() override;
  bool OutputOpen() const override { return AnyOpenStream(); }
  bool GroupsEmpty() override;
  void KillGroups() override;
  void StartDumps(double now, DumpAsk ask) override;
  DumpResult Dumps() override;
  std::vector<RankCpu> StartingCpu() const override;
  bool DumpsDone(double now) override { return harvest_.Poll(now) && ras_.Done(); }
  void DumpsEnded(double now) override {
    harvest_.Poll(now);
    harvest_.Settle();
  }
  double DumpsNext(double now) const override {
    return harvest_.done() ? now + FlightHarvest::kPollS
                           : std::min(now + FlightHarvest::kPollS, harvest_.deadline());
  }
  void StartProbe() override;
  bool ProbeRunning() const override { return probe_.running(); }
  bool ProbeDone(double now) override { return !probe_.running() || probe_.Done(now); }
  double ProbeDeadline() const override { return probe_.deadline(); }
  void FinishProbe() override;
  LocalFailure Failure(size_t child) override;
  std::vector<RankStack> Stacks() override;
  double FirstOutputWall() const override { return first_output_wall_; }
  void TermSent(bool sent) override { keeper_.TermSent(sent); }
  void BeginRestart(const RestartOrder& restart, bool print_own_failure) override;

  const SupervisorConfig& config_;
  OutputSink out_sink_, err_sink_;
  std::unique_ptr<LogDir> logs_;
  std::string error_dir_;        // where TORCHELASTIC_ERROR_FILEs go ("": none)
  Keeper keeper_;
  std::vector<Child> children_;   // this attempt's processes and their output
  std::vector<pid_t> lingering_;  // groups of reaped children not yet empty
  std::vector<pid_t> to_watch_;   // started, not yet named to the keeper
  int sfd_ = -1;
  bool reader_gone_ = false;      // stdout/stderr's reader left (EPIPE)
  bool launcher_gone_ = false;    // the lifeline broke (config_.lifeline)
  std::string out_buf_;  // tagged output, reused across reads
  // The control plane (config_.link), when there is one.
  JobLink* link_ = nullptr;
  bool output_seen_ = false;      // a child wrote in this poll round
  double first_output_wall_ = 0;  // this attempt's first output (CLOCK_REALTIME)
  StackProbe probe_;              // the readers from outside, before SIGABRT
  FlightHarvest harvest_;         // the ranks' flight records, before them
  DumpAsk dump_ask_ = DumpAsk::kLook;  // what harvest_'s records are for
  NcclRasQuery ras_;              // and NCCL's RAS socket, at the same time
  bool flight_ = false;           // the recorder's directories were made
  // What each child of this node runs, and the node's NODE_RANK (-1: none
  // in this attempt): both change when a spare takes a retired node's place.
  std::vector<ChildLaunch> launches_;
  int node_rank_ = 0;
  NodeMachine machine_;           // what is done when (node_machine.h)
  StoreHost store_host_;  // --warm-restart, on rank 0's node
  WarmPool warm_;                 // --warm-restart's standbys
};

}  // namespace supervise
}  // namespace aml
