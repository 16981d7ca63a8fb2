// What goes wrong in one simulated run of the control plane (aml-plane-sim,
// docs/control-plane.md, "Simulation"), drawn from the run's seed so that a
// seed replays it exactly. The oracle (oracle.h) reads the same plan to say
// what must happen.
//
//   none      a healthy job: every rank ends with 0 a few seconds after go
//   fail      one rank exits 7 (the job's first failure)
//   freeze    one shim stops processing (SIGSTOP, a node that stops answering)
//   cut       the link between one shim and its parent drops every frame
//   partition a set of shims is cut off from the rest, both sides alive
//   oneway    one shim's frames to its parent are lost while the parent's
//             reach it (a one-way cut: a route or a firewall rule lost)
//   Faults that end (Jepsen's nemesis heals what it breaks): "~D" after a
//   freeze, a cut, a partition or a one-way cut ends it D seconds later.
//   A freeze thaws (SIGCONT): what reached the shim meanwhile waits in its
//   kernel and is read before its timers run, a backlog. A cut heals: what
//   was sent across it meanwhile arrives then, in order (TCP retransmits),
//   and a link its peer closed meanwhile is reset. Such plans are checked
//   against what must hold whatever the timing, not against foreseen
//   outcomes (sim_invariants.cc: one root acts in a term, no old root
//   restarts, every shim ends, the shared log dir's record is true).
//   kill      one shim dies (its links close)
//   hang      no rank writes output: --hang-timeout judges the job hung;
//             "skip=S" too: shim S's first rank never entered the last
//             collective that every other rank entered (the culprit that
//             the verdict names, docs/control-plane.md "Naming the
//             culprit"); "nodump=S": shim S's first rank never answers its
//             flight-recorder pipe (random hangs draw both at times)
//   restart   one rank fails, --max-restarts 1: the next attempt ends well
//   sigterm   the launcher SIGTERMs one shim (in any phase)
//   slow      one shim handles each frame 20 times slower
//   busy      one shim is descheduled now and then (a busy node: data
//             loading, compilation, a noisy neighbour): from the fault's time
//             on, every 1 to 8 s it handles nothing, frames and timers alike,
//             for 0.2 to kBusyPauseS seconds (drawn from the seed); "busy@T:all"
//             makes every shim so. Its peers see its frames come in bursts,
//             and their allowances for it grow (liveness.h)
//   stubborn  one shim's ranks ignore SIGTERM (SIGKILL after --grace ends them)
//   straggler one shim's ranks leave a process behind that holds their output
//   stranger  a connection without the job's proof: a join at rank 0's
//             MASTER_PORT while shims join, and a hello at a shim's port
//   replay    a shim's hello, seen on the network, sent again to its parent
//   twin      a second hello, with the job's proof, for a rank already linked
//   unfit     (with spares) a shim's node fails its check before the next
//             attempt from then on (a port gone down: it is retired)
//   (the doors must refuse all three; the job goes on as if they never came)
//   pace      the straggler check (docs/control-plane.md, "Slow nodes"):
//             --straggler-check 10s over a healthy run of 80 s whose ranks
//             step every "step=" seconds; each shim's clock off by up to
//             "skew=" seconds, each rank's step longer by up to "jitter="
//             of it (3 % or 10 %); at times one shim "paceslow=S" whose
//             ranks are "factor=" times slower in one step of "burst=" (1:
//             every step). The slow node must be named within 3 looks when
//             the job waits for it 7.5 % of the time or more and its
//             slowdown is twice the jitter and the judge's floor or more;
//             no other ever is. At times, with no slow node, one healthy
//             shim "stall=S" whose ranks stall kStallS in one step about
//             every kStallEveryS (a checkpoint) and are a little late in
//             one step of kHiccupEvery (logging: late, never slow): slow
//             in a stall's look, never in 3 in a row, never named.
//   warm      --warm-restart (launch/warm_slots.h): every shim's ranks keep
//             standbys; a rank fails 12 to 40 s in, --max-restarts 2, the
//             restarts ending well; at times a second failure seconds into
//             the next attempt (its standbys made as it started), spares
//             with a lost node, and the standby faults below. A restart's
//             rank starts from its standby exactly when one lives, and one
//             lives whenever it was due (its rank's start, a spare's go)
//             and was not lost, whatever the moment of the failure
//             (sim_node.cc); none outlives its shim. "warm" in a spec turns
//             it on beside any other fault
//   standbylost   one shim's standbys alive then are killed (their ranks
//             start cold at the next restart, and say why)
//   standbyrefuse one shim's standbys refuse their orders from then on
//   random    any mix of the above, several at once, at random moments
//             (and at times spares: "spares=K" in a spec)
//   nemesis   faults that end, any number at random moments, with spares:
//             the root or any shim frozen then thawed, cut off then healed,
//             cut one way, partitions that heal, beside failures and kills
//   rootloss  with spares, rank 0's shim killed, frozen or cut off by a
//             partition of any size ("kill:0,restarts=1,spares=1" in a spec);
//             "kill@100:root" kills whichever shim holds the job then (a
//             heir that took it): random plans with spares lose the root
//             beside any other fault, before, during or after it, and at
//             times twice in a row
//
// A SPEC is a comma-separated list of KIND[@SECONDS][:SHIM], e.g.
// "fail@12:37,freeze@40:5": the kinds above at a virtual time after rank 0's
// go, on a shim (a random one when left out); a partition names its shims
// as a range, "partition@40:5-9", or "half" (shims 1 to N/2); "~D" ends
// the fault D seconds later ("freeze@40:0~12").
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "shim/control/pace/straggler_judge.h"
#include "shim/base/result.h"

namespace aml {

enum class FaultKind {
  kFail, kFreeze, kCut, kKill, kHang, kSigterm, kSlow, kStubbornRanks, kPartition, kStraggler,
  kStranger, kReplay, kTwin, kUnfit, kBusy, kStandbyLost, kStandbyRefuse, kOneWay
};
const char* FaultKindName(FaultKind k);

struct Fault {
  FaultKind kind = FaultKind::kFail;
  double at_s = 0;         // virtual seconds after rank 0's go
  int shim = -1;           // -1 until drawn; kRoot: the job's root then
  std::vector<int> group;  // kPartition: the shims cut off from the rest
  double for_s = -1;       // a freeze, cut, partition or one-way cut ends after this (-1: never)
  // A kill or a freeze of the shim that holds the job when it comes (rank
  // 0's, or the heir that took the job from it): "kill@100:root".
  static constexpr int kRoot = -3;
  // A busy machine: every shim ("busy@T:all").
  static constexpr int kAll = -4;
};

struct FaultPlan {
  std::string name;          // what --faults said
  std::vector<Fault> faults;
  bool quiet = false;        // no rank writes output (the hang)
  bool warm = false;         // --warm-restart
  // A rank's process group is up (its agent writes the modules it
  // imported) this long after its start ("groupup=S"). Standbys learn the
  // modules by themselves now (launch/warm_slots.h): it changes nothing;
  // parsed and drawn still, so that every plan replays as it was drawn.
  double group_up_s = 0.5;
  int max_restarts = 0;
  bool restarts_succeed = false;  // attempts after the first end well
  // --spares: the last `spares` shims start no ranks and wait for a node to
  // replace (job_spares.cc); --retire-after 2.
  int spares = 0;
  static constexpr int kRetireAfter = 2;
  // With `quiet`: shim `skip`'s first rank never entered the attempt's last
  // collective (-1: every rank entered it), in every attempt it runs ranks
  // in; shim `nodump`'s first rank never answers its pipe (-1: all answer).
  int skip = -1, nodump = -1;
  // --faults pace (above).
  bool pace = false;
  double step_s = 0.1, skew_s = 0, factor = 1;
  double jitter = 0.03;  // each rank's, up to this share of a step ("jitter=")
  int pace_slow = -1, burst = 1;
  int pace_stall = -1;  // "stall=S"
  static constexpr double kStallS = 0.8, kStallEveryS = 18;
  static constexpr int kHiccupEvery = 16;
  // The steps between two of the stalling shim's stalls, and its hiccup:
  // 2.5 times the judge's floor, under 5 % of the time.
  int StallEvery() const;
  double HiccupS() const {
    return 2.5 * std::max(StragglerJudge::kMinLateS, StragglerJudge::kLateFrac * step_s);
  }
  static constexpr double kPaceEveryS = 10, kPaceRunS = 80;
  // The share of the job's time spent waiting for the slow node beyond the
  // judge's floor (what it counts), and
  // whether its lateness stands clear of the ranks' jitter (twice it) and
  // of a busy node's scheduler (twice the judge's kMinLateS: imported).
  double PaceWaitShare() const;
  bool PaceClearOfJitter() const {
    return factor - 1 >= 2 * jitter && (factor - 1) * step_s >= 2 * StragglerJudge::kMinLateS;
  }
  // --faults busy: the longest pause of a descheduled shim. Below a steady
  // link's 5 s allowance less a beat: a busy shim is late, never lost.
  static constexpr double kBusyPauseS = 2.5;
  bool Busy() const;
  // Some fault ends (a thaw, a heal): checked by what must hold, not by
  // foreseen outcomes.
  bool Ends() const;
  // How long a healthy attempt runs before its ranks end with 0: a few
  // seconds, or past the last fault (forever when the ranks hang).
  double run_s = 5;
  // In a later attempt, a rank that fails fails this long after its start.
  static constexpr double kRefailS = 1;

  // "freeze@35.000:12,fail@3.000:7,restarts=1": what was drawn.
  std::string Describe() const;
};

// Parses --faults (a name above or a SPEC) and draws what is left to chance
// from `rng` for a job of `shims` shims.
Result<FaultPlan> MakeFaultPlan(const std::string& spec, int shims, std::mt19937_64* rng);

}  // namespace aml
