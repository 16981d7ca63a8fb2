// The control plane in deterministic simulation (docs/control-plane.md,
// "Simulation"): N shims in one process on a virtual clock, each running
// the real running links of the overlay and the real job state machine
// (shim/control/tree_links.h, job_machine.h) over simulated links: the tree
// rank 0's real TreePlanner builds, a per-hop latency and a bandwidth, a
// processing cost per frame on each shim (frames are really encoded and
// decoded), and local ranks that print, fail, hang or ignore SIGTERM. The
// same seed gives the same run, event for event.
//
// What is modelled rather than run: the sockets and the join's handshake
// (connect, challenge, proof, place, hello: its round trips and its cost at
// rank 0 and at each parent are counted, its code is plane.cc's and is tested
// over real sockets by plane_test and the e2e tests).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shim/base/result.h"

namespace aml {

struct SimOptions {
  int shims = 2;
  uint64_t seed = 1;
  std::string faults = "none";
  double latency_us = 50;       // per hop, one way
  double bandwidth_gbps = 10;   // per link
  double cost_us = 0;           // per frame a shim handles (0: kFrameCostUs)
  int fanout = 32;
  double grace_s = 2;           // --grace
  double hang_timeout_s = 0;    // --hang-timeout (0: 30 s when the faults hang, else off)
  double limit_s = 600;         // virtual time after which a shim still running is stuck
  int per_node = 1;             // shims per node (the tree groups a node's shims)
  bool frames = false;          // report each shim's frames by type
};

// One run's figures (virtual seconds) and the first broken invariant.
struct SimResult {
  int shims = 0;
  int fanout = 32;
  uint64_t seed = 0;
  std::string faults;
  std::string plan;           // what was drawn: "freeze@35.000:12,fail@3.000:7,restarts=1"
  int depth = 0;
  double join_s = 0;          // first shim's start to rank 0's go reaching every shim
  double stop_p99_s = -1;     // first failure to each shim's stop order (-1: none)
  double stop_max_s = -1;
  double lost_detect_s = -1;  // freeze, cut or kill to rank 0's verdict
  double rollcall_s = -1;     // hang verdict to the printed roll-call
  double restart_round_s = -1;  // first failure to the last shim's restart order
  double replace_s = -1;      // --spares: the failure to the spare's attempt ordered everywhere
  int new_root = -1;          // --spares: the heir that took the job from rank 0's shim (-1: none)
  double end_s = 0;           // when the last shim exited
  long long msgs_max_per_shim = 0;  // frames one shim handled, at most
  long long rank0_msgs = 0, rank0_bytes = 0;
  // The CPU (this thread's) spent handling rank 0's shim's events: the
  // real code's work for it (its frames, timers, looks), and the
  // simulator's delivery of them (an upper bound of the root's cost).
  double rank0_cpu_s = 0;
  long long events = 0;
  int exit_code = 0;          // rank 0's (or the job's, when rank 0 was lost)
  int restarts = 0;
  // --faults pace: the nodes named slow ("shim@lookN"), the looks judged,
  // and the largest look's part on any link.
  std::string named;
  long long pace_looks = 0, pace_part_bytes = 0;
  double wall_s = 0;
  std::string invariants = "ok";  // or the first broken one, with its replay command
  // With SimOptions::frames: each shim's frames handled after the join, by
  // type ("beat=31 go=1 stop=1"), as the real shim's -v prints them.
  std::vector<std::string> frames;
  std::string Json() const;
};

// The per-frame cost on this machine: the overlay's and the machine's work
// for one frame (decode, handling, the encode of what it passes on) and the
// send and receive system calls over a local socket pair. Measured once by
// MeasureFrameCostUs(); kFrameCostUs is the figure used by default so that a
// seed replays the same on any machine.
constexpr double kFrameCostUs = 7.5;
double MeasureFrameCostUs();

Result<SimResult> RunSim(const SimOptions& o);

}  // namespace aml
