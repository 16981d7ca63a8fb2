// What must happen in a simulated run (docs/control-plane.md, "What each
// fault must do"), worked out from the fault plan and the tree alone, by
// rules written apart from the code under test: not how the shims decide,
// but what a user must see. aml-plane-sim checks every run against it.
//
// The oracle follows the job at rank 0 from one decisive event to the next:
// a rank's failure, a lost shim, the launcher's signal, the hang, or the
// attempt's healthy end. Each event has a window of virtual time in which
// rank 0 must act on it (a failure: its time plus the tree's latency; a
// frozen shim or a cut link: 5 s of silence, 30 s during start-up; ...).
// When the windows of two events overlap, either may come first, and the
// oracle follows both: a run must match one of the outcomes it lists.
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "shim/sim/fault_plan.h"

namespace aml {

// The simulated shims' --dump-timeout (its default; the flight recorder is
// on in every plan with --hang-timeout or the straggler check).
constexpr double kSimDumpTimeoutS = 10;

// The exit codes a shim may end with, as bits.
enum ExitBit : uint8_t {
  kExit0 = 1, kExit7 = 2, kExit124 = 4, kExit125 = 8, kExit137 = 16, kExit143 = 32,
  kNoExit = 64,  // frozen or killed: it never exits
};
uint8_t ExitBitOf(int code);  // 0 for a code no run may end with
std::string ExitBitsText(uint8_t bits);  // "0|125"

// The job and its timing rules, as a user reads them in the docs.
struct OracleSetup {
  std::vector<int> parent;  // each shim's parent in the tree (-1: rank 0)
  double grace_s = 2;       // --grace
  double beat_s = 1;        // the heartbeat
  double hang_s = 0;        // --hang-timeout (0: none)
  double startup_s = 30;    // a silent link is allowed 30 s this long after go
  double term_s = 0.05;     // ranks end this long after SIGTERM (unless stubborn)
  double slack_s = 0.25;    // the tree's latency: a word reaches everyone within it
  // --faults busy: a shim's longest pause (0: none busy; slack_s holds one
  // for each level a word crosses): a busy shim finds a silent link later,
  // its allowance grown with its own pauses.
  double busy_s = 0;
  // Every shim but rank 0's, in the order it linked to its parent as the
  // job joined (a root's first child still linked is its heir).
  std::vector<int> join_order;
};

// One attempt as failure.json's "attempts" must list it.
struct ForeseenAttempt {
  int code = 0;            // 7, 124 or 125
  std::set<int> ranks;     // the first failing rank it may name (empty: a hang or a loss)
  bool hang = false;
  bool announced = false;  // a stop or a restart line named it (not a round cut short)
};

// One way the run may go.
struct Foreseen {
  std::string story;       // "fail@3.000:5 first; restart 1; ...", for the message
  int code = 0;            // rank 0's exit status (the job's)
  int restarts = 0;
  std::vector<ForeseenAttempt> ended;     // every attempt that did not end well
  std::vector<ForeseenAttempt> attempts;  // failure.json's: with --max-restarts, when the job fails
  std::string refused;     // why no restart followed: "", "spent", "same", "lost", "nospare",
                           // "majority" (more than half of the shims lost)
  std::set<std::string> refused_also;  // any of these as well (the order losses are heard in)
  std::set<int> lost;      // a loss: the shims rank 0 may name
  // --spares: the shims retired by the end (failure.json's "retired"): at
  // least the first set, at most the second (the losses of one partition
  // reach rank 0 one by one; it stops at the first it has no spare for).
  std::set<int> retired, retired_max;
  // --spares: who holds each NODE_RANK after each restart.
  std::vector<std::vector<int>> rosters;
  // A hang that ends the job: the shims the roll-call names as silent, at
  // least these and at most those.
  std::set<int> missing_min, missing_max;
  // And its culprit (failure.json's "culprit"): the shims it may name, -1
  // for none (empty: not checked).
  std::set<int> culprit;
  double decided_lo = 0, decided_hi = 0;  // rank 0's last verdict (or the job's end)
  // When rank 0 must order every rank ended at once on a failure (each
  // attempt that failed), and start each restart.
  std::vector<std::pair<double, double>> halts, restart_times;
  // --spares: one more halt may come in this window (losses of one moment
  // heard one by one: the first had a spare, the next had none).
  std::pair<double, double> extra_halt{-1, -1};
  std::vector<uint8_t> codes;  // per shim: the exit codes it may end with
  // The shim that holds the job at the end: rank 0's, or a heir that took
  // it (the run's record is that shim's). `loose`: a compound of faults
  // these rules do not order, foreseen by its exit codes and root alone.
  int root = 0;  // (-2: any)
  bool loose = false;
  // The root ends without writing the job's record (a heir it lost alive
  // may hold the job beyond a cut).
  bool no_record = false;
};

// Every way the run may go (at least one).
std::vector<Foreseen> Foresee(const FaultPlan& plan, const OracleSetup& setup);

// When each shim stops being reachable from rank 0: frozen, killed, or its
// path to rank 0 cut (1e18 when never).
std::vector<double> ReachableUntil(const FaultPlan& plan, const OracleSetup& setup);

}  // namespace aml
