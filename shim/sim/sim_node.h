// One node's ranks in the simulation (sim_cluster.h): the process table that
// the real supervisor's state machine (launch/node_machine.h) runs over on
// every simulated node, with ranks that print, fail, hang (print nothing),
// ignore SIGTERM, and leave a process behind that holds their output pipe.
// Processes end by events the cluster schedules on its virtual clock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "launch/node_machine.h"

namespace aml {

// What this node's ranks do, from the fault plan.
struct RankPlan {
  bool prints = true;       // they write output (a quiet job hangs)
  double run_s = 5;         // a healthy attempt's ranks end with 0 this long after start
  double first_fail = -1;   // the first attempt's rank fails then (virtual time; -1: never)
  bool refail = false;      // a later attempt's ranks fail FaultPlan::kRefailS after start
  bool stubborn = false;    // SIGTERM is ignored: only SIGKILL ends them
  bool straggler = false;   // each leaves a process behind, holding its output pipe
  // A hang's flight records (docs/control-plane.md, "Naming the culprit"):
  // this node's first rank never entered the last collective (`skip`), or
  // never answers its pipe (`nodump`: the harvest waits --dump-timeout).
  bool skip = false;
  bool nodump = false;
  double dump_timeout_s = 10;
  // --faults pace (fault_plan.h): the ranks step every `step_s` from 1 s
  // after rank 0's go, every node's alike; this node's `factor` times
  // slower in one step of `burst` when `slow`; its clock off by `skew_s`.
  bool pace = false, slow = false;
  double step_s = 0.1, factor = 1, skew_s = 0;
  double jitter = 0.03;  // each rank's, up to this share of a step
  int burst = 1;
  // --warm-restart (launch/warm_slots.h): each rank keeps a standby; this
  // node's standbys alive at `standby_lost_s` are killed then, and from
  // `standby_refuse_s` on they refuse their order (-1: never; virtual time
  // after rank 0's go).
  bool warm = false;
  double standby_lost_s = -1, standby_refuse_s = -1;
  // The job's stalls: this node's ranks (when `stall`) stall `stall_s` in
  // one step of `stall_every` and `hiccup_s` in one of `hiccup_every`;
  // every node's next step waits for it.
  bool stall = false;
  double stall_s = 0, hiccup_s = 0;
  int stall_every = 1, hiccup_every = 1;
  uint64_t seed = 0;
};

class SimProcs : public NodeProcs {
 public:
  static constexpr double kTermS = 0.05;    // a rank ends this long after SIGTERM
  static constexpr double kKillS = 0.001;   // and after SIGKILL
  static constexpr double kAbortS = 0.05;   // and after SIGABRT (its dump)
  static constexpr double kProbeS = 0.2;    // the stack readers from outside
  static constexpr double kFirstOutputS = 0.5;  // a rank's first output after start
  static constexpr double kDumpS = 1;       // a rank's flight record, asked for, comes
  static constexpr int64_t kLastCollective = 100;  // every rank entered it (the first attempt's)
  static constexpr int kExitFail = 7;
  static constexpr double kPaceStartS = 1;    // the first step, after go
  static constexpr double kAllReduceS = 0.001;
  // A node's processes: a rank, what it left behind, its standby.
  static constexpr int kRankProc = 0, kLeftProc = 1, kStandbyProc = 2;

  // A process's end to schedule: (when, child, which process, epoch, wait status).
  using Schedule = std::function<void(double at, size_t child, int proc, uint64_t epoch,
                                      int status)>;

  SimProcs(int shim, size_t ranks, const RankPlan& plan, double grace_s, double wall_epoch,
           Schedule schedule)
      : shim_(shim), plan_(plan), grace_s_(grace_s), wall_epoch_(wall_epoch),
        schedule_(std::move(schedule)), procs_(ranks) {}

  void set_now(double now) { now_ = now; }
  // The virtual time of rank 0's go: the plan's times count from it.
  void set_origin(double t0) { origin_ = t0; }
  // The job starts here (a spare's standbys are due from then).
  void Go(double now);
  // A scheduled end came: true when it ends the rank itself (the machine is
  // told, with `*status`); a straggler's end, or a stale one, is not.
  bool Fire(size_t child, bool straggler, uint64_t epoch, int status, int* out_status);
  bool AnyPrinting() const;  // a running rank that writes output
  // A standby's scheduled end (--faults standbylost): true when it ended a
  // live one (`*why`: what the machine is told).
  bool FireStandby(size_t child, uint64_t epoch, int status, std::string* why);
  bool StandbysLeft() const;
  int warm_starts = 0, cold_starts = 0;  // a restart's ranks, from a standby or not
  bool retired = false;  // --spares: it ran ranks, and was retired
  int attempt() const { return attempt_; }
  std::vector<double> started_at;  // each start of an attempt (for the checks)
  std::vector<int> started_attempts;  // and which attempt it was (0: the first)
  // What went wrong (a rank started after its stop, ...): "" when nothing.
  std::string violation;
  bool stopped = false;  // the shim had its stop or its launcher's signal

  // NodeProcs.
  bool Start(size_t child, const RestartOrder* restart, WarmStart* warm, int* code) override;
  void Signal(size_t child, int sig) override;
  void Abort(size_t child) override;
  bool SignalStragglers(int sig) override;
  bool StragglersLeft() override;
  bool OutputOpen() const override;
  bool GroupsEmpty() override { return !StragglersLeft(); }
  void KillGroups() override { SignalStragglers(9); }
  void StartDumps(double now, DumpAsk ask) override;
  DumpResult Dumps() override;
  bool DumpsDone(double now) override { return now >= dumps_until_; }
  double DumpsNext(double now) const override { return std::max(now, dumps_until_); }
  void StartProbe() override;
  bool ProbeRunning() const override { return probe_until_ >= 0; }
  bool ProbeDone(double now) override { return probe_until_ < 0 || now >= probe_until_; }
  double ProbeDeadline() const override { return probe_until_; }
  void FinishProbe() override { probe_until_ = -1; }
  LocalFailure Failure(size_t child) override;
  std::vector<RankStack> Stacks() override;
  double FirstOutputWall() const override;
  void TermSent(bool) override {}
  void BeginRestart(const RestartOrder& restart, bool print_own_failure) override;
  std::string MakeStandby(size_t child) override;
  void EndStandby(size_t child) override;

 private:
  struct Proc {
    bool alive = false;
    uint64_t epoch = 0;  // a start's: ends scheduled for an older one are stale
    double start = 0;
    int status = 0;      // its wait status, once ended
    double term_at = -1; // its first SIGTERM
  };
  struct Pair {
    Proc rank, left;  // the rank, and what it left behind
    Proc standby;     // --warm-restart: its standby
    // Its standby is due from then (the rank's start; a spare's go).
    double due_from = -1;
    bool spare = false;
    bool lost = false;  // its standby was lost since it was due
  };
  // The rule a restart's rank is held to (`warm`: the machine's word).
  void CheckWarm(size_t child, WarmStart* warm);
  void End(size_t child, bool straggler, double at, int status);
  double StepAt(int64_t k) const;  // when step k (1-based) began (virtual time)
  std::vector<RankTimes> Times() const;  // --faults pace: each rank's entry times

  int shim_;
  RankPlan plan_;
  double grace_s_;
  double wall_epoch_;
  Schedule schedule_;
  std::vector<Pair> procs_;
  double now_ = 0, origin_ = 0;
  int attempt_ = 0;  // 0 for the first
  bool ran_ = false;  // ranks started in this attempt (not a spare's wait)
  uint64_t next_epoch_ = 1;
  double probe_until_ = -1;
  double dumps_until_ = -1;
  std::vector<bool> asked_;  // each rank was running when its record was asked for
  DumpAsk ask_ = DumpAsk::kLook;
};

}  // namespace aml
