// The simulated world of aml-plane-sim (sim_cluster.h): the shims, each the
// real overlay, job machine and node machine over simulated links, ranks and
// clock, and the cluster that carries their frames and plays the fault plan.
// Private to the simulator's files:
//   sim_cluster.cc     the links (frames, closes, a child moved below the heir),
//                      the ranks' ends, the faults, a takeover
//   sim_join.cc        the join: the plan, the doors, a joiner's round trips
//   sim_run.cc         the event loop, the replay line
//   sim_invariants.cc  what the real code's state must be at the end
#pragma once

#include <signal.h>
#include <time.h>
#include <sys/wait.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "launch/failure_report.h"
#include "launch/record_fence.h"
#include "shim/base/clock.h"
#include "shim/base/json_read.h"
#include "shim/base/units.h"
#include "shim/control/door.h"
#include "shim/control/job_machine.h"
#include "shim/control/liveness.h"
#include "shim/control/plane.h"
#include "shim/control/plane_timing.h"
#include "shim/control/roster.h"
#include "shim/control/tree_links.h"
#include "shim/control/tree_plan.h"
#include "shim/control/wire.h"
#include "shim/plan/node_check.h"
#include "shim/sim/fault_plan.h"
#include "shim/sim/oracle.h"
#include "shim/sim/sim_check.h"
#include "shim/sim/sim_cluster.h"
#include "shim/sim/sim_node.h"

namespace aml {
namespace simw {


constexpr double kWallEpoch = 1.7e9;   // virtual CLOCK_REALTIME = this + virtual time
constexpr double kStartupS = PlaneTiming{}.startup_s;  // as the real plane's
constexpr double kJoinFrames = 3;      // frames a door handles per joiner (greeting, join, up)
constexpr double kSlowFactor = 20;     // a slow shim's cost per frame
constexpr pid_t kLauncherPid = 4711;   // who sends the launcher's SIGTERM

enum class Ev {
  kFrame, kClosed, kTimer, kFault, kProc, kJoin, kPlace, kHello, kWelcome, kJoinAttack, kPause,
  kFaultEnd  // a fault that ends (fault_plan.h "~D"): a thaw, a heal
};

struct Event {
  double t;
  uint64_t seq;
  Ev kind;
  int shim;
  int from;  // the sender (frames, closes), the fault's index, the timer's generation
  std::shared_ptr<const std::string> frame;
  // kProc: a process of the shim's rank `child` ends with `status` (`proc`:
  // SimProcs::kRankProc, kLeftProc, kStandbyProc).
  size_t child = 0;
  int proc = 0;
  uint64_t epoch = 0;
  int status = 0;
};
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.t != b.t ? a.t > b.t : a.seq > b.seq;
  }
};

class Cluster;
void ScheduleProc(Cluster* w, int shim, double at, size_t child, int proc, uint64_t epoch,
                  int status);

// One shim: the real overlay's running part and the job's state machine
// (TreeLinks) over simulated links, the real supervisor's state machine
// (NodeMachine) over simulated ranks (SimProcs), and the machine it runs on.
class Shim : public LinkIo, public JobChannel {
 public:
  Shim(Cluster* w, int id, const JobConfig& c, double beat_s, const RankPlan& ranks)
      : tree(c, this, beat_s, kStartupS),
        procs(id, c.ranks.size(), ranks, c.grace_s, kWallEpoch,
              [w, id](double at, size_t child, int proc, uint64_t epoch, int status) {
                ScheduleProc(w, id, at, child, proc, epoch, status);
              }),
        // (The ranks' records looked at as the supervisor does: plane_timing.h.)
        node(NodeConfig{c.ranks.size(), c.grace_s, c.rank >= c.size - c.spares,
                        TimingOf(c.hang_timeout_s, c.flight_recorder).look_every_s,
                        c.flight_recorder, ranks.warm},
             &procs, this),
        w_(w),
        id_(id) {}

  // LinkIo.
  void Send(int peer, const std::string& frame) override;
  bool Open(int peer) const override { return !closed.count(peer); }
  bool Pending(int peer) const override {
    (void)peer;
    return false;  // frames leave as they are sent
  }
  // Its host's clock: off by its skew (--faults pace).
  double WallNow() const override { return kWallEpoch + now_ + skew_s; }
  int FreePort() const override { return 29500 + tree.machine().restarts() + 1; }
  std::vector<int> Below(int shim) const override;
  void SentDown(const std::string& frame) override;
  // A new root (job_heir.cc): the tree the planner made; a hello to the
  // heir at the address the root named, as plane_join.cc's Relink says it.
  std::vector<int> Parents() const override;
  bool Relink(int heir, const std::string& addr, double now) override;
  double RootHeardAgo(int shim, const std::string& addr, double now) override;

  // JobChannel: the supervisor's machine and the job's talk through it, at
  // the time of the event the shim handles.
  void OnOutput(double now) override { tree.OnOutput(now); }
  // (Held while a woken root hears its links anew: TreeLinks::ToJob.)
  void OnChildFailed(const LocalFailure& f) override {
    tree.ToJob(now_, [f](JobMachine& m, double at) { m.OnChildFailed(f, at); });
  }
  void OnRecords(const std::vector<RankRecord>& records) override {
    tree.ToJob(now_, [records](JobMachine& m, double at) { m.OnRecords(records, at); });
  }
  void OnStacks(const std::vector<RankStack>& stacks) override {
    tree.ToJob(now_, [stacks](JobMachine& m, double at) { m.OnStacks(stacks, at); });
  }
  void OnPace(int64_t look, const std::vector<RankTimes>& times) override {
    tree.OnOwnPace(look, times, now_);
  }
  void OnChildrenDone(const NodeOutcome& o) override {
    tree.ToJob(now_, [o](JobMachine& m, double at) { m.OnChildrenDone(o, at); });
  }
  void OnWarmStarts(int warm, int cold) override {
    tree.ToJob(now_, [warm, cold](JobMachine& m, double at) { m.OnWarmStarts(warm, cold, at); });
  }
  void OnShimSignalled(int sig, const std::string& why) override {
    machine().OnShimSignalled(sig, why, now_);
  }
  bool MayExit() const override { return machine().MayExit(now_); }
  bool PrintsOwnFailure() const override { return machine().PrintsOwnFailure(); }
  RecordStamp Stamp() const override { return machine().Stamp(); }
  std::optional<LinkOrder> TakeOrder() override;

  void set_now(double t) {
    now_ = t;
    procs.set_now(t);
  }
  JobMachine& machine() { return tree.machine(); }
  const JobMachine& machine() const { return tree.machine(); }
  int id() const { return id_; }
  int parent() const { return tree.parent(); }

  TreeLinks tree;
  SimProcs procs;
  NodeMachine node;
  std::set<int> closed;  // peers whose link closed
  bool started = false;  // go: the job started here
  // The machine the shim runs on.
  double busy_until = 0, cost_s = 0;
  // --faults busy: when each frame (or close) on its way here arrives: one
  // that came while it was descheduled is read before its timers run.
  std::multiset<double> inbox;
  double paused_until = -1;  // the end of its last pause
  bool frozen = false, killed = false, exited = false;
  // Frozen until a thaw (fault_plan.h "~D"): what reaches it meanwhile (its
  // links' frames and closes, its ranks' ends) waits here, read on waking.
  bool thaws = false;
  std::vector<Event> backlog;
  double exit_at = -1;
  int exit_code = 0;
  uint64_t timer_gen = 0;
  int spins = 0;
  JobState last_state = JobState::kRunning;  // (for the check of one root)
  double timer_at = -1;
  // What it was told.
  double stop_order_at = -1, restart_order_at = -1, collect_order_at = -1, end_order_at = -1;
  double signalled_at = -1;
  int restart_orders = 0;
  int pace_orders = 0;  // the straggler check's looks it was asked for
  double skew_s = 0;    // its clock against the virtual one
  std::vector<double> restart_orders_at;  // when it took each restart order
  std::vector<int> nodes;  // --spares: its NODE_RANK in each restart (-1: none)
  std::vector<std::string> maddrs;  // and its ranks' MASTER_ADDR ("": the job's)
  std::vector<int> restart_ns;  // and which restart each was (one missed in a cut is not there)
  bool has_final = false;
  StopOrder final_order;  // its stop (rank 0's: the job's record)
  std::string join, hello;  // its join and its hello, as the network saw them
  long long handled = 0, bytes = 0;

 private:
  Cluster* w_;
  int id_;
  double now_ = 0;
};


class Cluster {
 public:
  Cluster(const SimOptions& o, FaultPlan plan)
      : o_(o),
        plan_(std::move(plan)),
        nonces_(o.seed * 0x2545f4914f6cdd1dULL),
        jitter_(o.seed ^ 0x6a09e667f3bcc909ULL),
        pauses_(o.seed ^ 0xbb67ae8584caa73bULL) {
    lat_s_ = o.latency_us * 1e-6;
    cost_s_ = (o.cost_us > 0 ? o.cost_us : kFrameCostUs) * 1e-6;
    bytes_per_s_ = o.bandwidth_gbps * 1e9 / 8;
    hang_s_ = o.hang_timeout_s > 0 ? o.hang_timeout_s : (plan_.quiet ? 30 : 0);
    beat_s_ = TimingOf(hang_s_ > 0 ? std::optional<double>(hang_s_) : std::nullopt, false).beat_s;
  }

  SimResult Run();
  void Send(int from, int to, const std::string& frame);
  std::vector<int> Below(int shim) const { return planner_->Below(shim); }
  std::vector<int> Parents() const { return planner_->Parents(o_.shims); }
  // --spares: what shim `id`'s node check says now ("" when fit): the real
  // check (shim/plan/node_check.h) over the node as the job started (8
  // GPUs, two InfiniBand ports) and as it is now: an "unfit" fault takes a
  // GPU off the bus or sets a port DOWN (by the shim's parity).
  std::string Unfit(int id) const {
    FabricReport now = NodeFabric();
    int gpus = kNodeGpus;
    for (const Fault& f : plan_.faults)
      if (f.kind == FaultKind::kUnfit && f.shim == id && shims_[0]->started &&
          now_ >= root_go_ + f.at_s) {
        if (id % 2 == 0) now.devices[0].ports[0].state = "DOWN";
        else gpus = kNodeGpus - 1;
      }
    return CheckNode(TakeBaseline(kNodeGpus, NodeFabric()), gpus, now);
  }
  static constexpr int kNodeGpus = 8;
  static FabricReport NodeFabric() {
    FabricReport r;
    for (int d = 0; d < 2; ++d) {
      IbDevice dev;
      dev.name = "mlx5_" + std::to_string(d);
      IbPort port;
      port.port = 1;
      port.state = "ACTIVE";
      port.phys_state = "LinkUp";
      port.link_layer = "InfiniBand";
      dev.ports.push_back(port);
      r.devices.push_back(dev);
    }
    return r;
  }
  bool Relink(int from, int heir, const std::string& addr, double now);
  double RootHeardAgo(int from, int shim, const std::string& addr, double now);
  // Each node's address (the address its shims' connections come from) and
  // each shim's port for the tree: "10.N.N.N", 1024 + a shim's place on its node.
  std::string NodeAddr(int shim) const {
    const int node = shim / o_.per_node;
    return "10." + std::to_string(node >> 16 & 255) + "." + std::to_string(node >> 8 & 255) + "." +
           std::to_string(node & 255);
  }
  int PortOf(int shim) const { return 1024 + shim % o_.per_node % 60000; }
  std::string HostOf(int shim) const { return "n" + std::to_string(shim / o_.per_node); }
  void NoteVerdict(int from, const std::string& frame);
  void Schedule(int shim, double at, size_t child, int proc, uint64_t epoch, int status) {
    Event e{at, 0, Ev::kProc, shim, 0, nullptr};
    e.child = child;
    e.proc = proc;
    e.epoch = epoch;
    e.status = status;
    Push(std::move(e));
  }

 private:
  void Push(Event e) {
    e.seq = seq_++;
    if ((e.kind == Ev::kFrame || e.kind == Ev::kClosed) && Inboxed())
      shims_[static_cast<size_t>(e.shim)]->inbox.insert(e.t);
    q_.push(std::move(e));
  }
  // When a frame of `bytes` sent now from `from` reaches `to`: each
  // direction of a link is one ordered byte stream (as TCP is), sent at the
  // link's bandwidth, so a frame never overtakes one sent before it.
  double Arrival(int from, int to, size_t bytes, double now) {
    double& free_at = wire_free_[(static_cast<uint64_t>(from) << 32) | static_cast<uint32_t>(to)];
    free_at = std::max(now, free_at) + static_cast<double>(bytes) / bytes_per_s_;
    return free_at + lat_s_;
  }
  double Effective(Shim& s, double t, double cost) {
    const double start = std::max(t, s.busy_until);
    s.busy_until = start + cost;
    return s.busy_until;
  }
  // Frames and closes are counted in each shim's inbox (read before its
  // timers after a pause): with a busy machine, or faults that end.
  bool Inboxed() const { return plan_.Busy() || plan_.Ends(); }
  // A link that carries nothing: cut, or across a partition.
  bool Cut(int a, int b) const {
    for (const auto& [index, in] : parts_)
      if (in[static_cast<size_t>(a)] != in[static_cast<size_t>(b)]) return true;
    return cut_.count({std::min(a, b), std::max(a, b)}) > 0;
  }

  void Build();
  RankPlan RanksOf(int shim) const;
  double SkewOf(int shim) const;
  std::string Nonce();
  bool Linked(const Shim& parent, int rank) const {
    return parent.tree.Keeps(rank) && !parent.closed.count(rank);
  }
  void Join(Shim& root, Shim& joiner, double at);
  void Hello(Shim& parent, Shim& joiner, double at);
  void AtJoinDoor(const Fault& f);
  void AtTreeDoor(const Fault& f, double now);
  void OnFrame(Shim& s, int from, const std::string& frame, double now);
  void OnClosed(Shim& s, int from, double now);
  void OnProc(Shim& s, const Event& e, double now);
  void OnFault(const Fault& f, double now);
  // Faults that end (sim_cluster.cc): a freeze's thaw, a cut's or a
  // partition's heal; what a cut held meanwhile, sent on at the heal.
  void OnFaultEnd(const Fault& f, double now);
  bool Carries(int from, int to) const { return !Cut(from, to) && !oneway_.count({from, to}); }
  void Hold(int from, int to, std::shared_ptr<const std::string> frame);
  void SendHeld(double now);
  // The shared log dir (every shim's --log-dir one folder): what a shim's
  // supervisor writes into failure.json as it exits, through the real
  // fence (launch/record_fence.h); and what a root did in which term.
  void WriteRecord(const Shim& s);
  void CheckFaultsThatEnd();
  void Go(Shim& s, double now);
  // `late`: the peer reads the close this much later (a dead process's
  // links: each node's kernel and loop see it at their own moment).
  void CloseLink(Shim& s, int peer, double now, double late = 0);
  void CloseFinished(Shim& s, double now);
  void Wake(Shim& s, double now, bool woke_by_timer = false);
  void Exit(Shim& s, double now);
  std::string Replay() const;
  void Violate(const std::string& what);
  void TookOver(const Shim& s);
  void Check(SimResult* r);
  void CheckRosters();
  double ReplaceSeconds() const;

  SimOptions o_;
  FaultPlan plan_;
  double lat_s_, cost_s_, bytes_per_s_, hang_s_, beat_s_;
  std::vector<std::unique_ptr<Shim>> shims_;
  std::priority_queue<Event, std::vector<Event>, Later> q_;
  uint64_t seq_ = 0;
  double now_ = 0;
  long long events_ = 0;
  double rank0_cpu_s_ = 0;  // SimResult::rank0_cpu_s
  std::set<std::pair<int, int>> cut_;
  std::set<std::pair<int, int>> oneway_;  // (from, to): from's frames to `to` are lost
  std::map<size_t, std::pair<int, int>> cut_links_;  // a cut fault's link, or a one-way's

  // Frames (or a close: null) sent across a cut that heals, in order, per
  // direction: sent on when it heals.
  std::map<std::pair<int, int>, std::vector<std::shared_ptr<const std::string>>> held_;
  std::string shared_record_;               // the shared log dir's failure.json ("": none)
  std::map<int, std::set<int>> acted_;      // each term's roots that gave a verdict
  std::map<int, double> term_began_;        // when each term's root first gave one
  struct Act {
    double at;
    int term, shim;
    std::string type;
  };
  std::vector<Act> acts_;  // each verdict a root gave: when, in which term, which
  // Each partition under way (by its fault's index): which shims it cuts
  // off from the rest. Two at once both hold: a link is cut when either
  // parts its ends (as the oracle's Split sees them).
  std::map<size_t, std::vector<char>> parts_;
  std::unordered_map<uint64_t, double> wire_free_;  // each direction's sender, busy until
  std::set<int> faulted_;         // frozen, killed, or cut from its parent
  std::set<int> dead_;            // frozen or killed: never ends by itself
  double go_all_ = 0, root_go_ = 0;
  double first_fail_ = -1, loss_at_ = -1;
  std::vector<double> causes_;     // each rank's failure and each loss, when it happened
  std::unique_ptr<TreePlanner> planner_;
  // The job's proof of membership (a secret of its own), a stranger's, and
  // the nonces of the doors' challenges, drawn from the seed.
  Prover prover_{"aml-plane-sim's job secret", nullptr};
  Prover stranger_{"someone else's secret", nullptr};
  std::mt19937_64 nonces_;
  std::mt19937_64 jitter_;  // when each node reads a dead shim's close
  std::mt19937_64 pauses_;  // a busy shim's pauses (--faults busy)
  double Late() { return std::uniform_real_distribution<double>(0, 0.02)(jitter_); }
  std::string violation_;
  RunRecord record_;
  int job_root_ = 0;  // the shim that holds the job (rank 0's, or a heir that took it)
  std::vector<int> join_order_;  // each shim as it linked to its parent at the join
};


}  // namespace simw
}  // namespace aml
