#include "shim/sim/sim_cluster.h"

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
#include "shim/sim/sim_node.h"

namespace aml {
namespace {

constexpr double kWallEpoch = 1.7e9;   // virtual CLOCK_REALTIME = this + virtual time
constexpr double kStartupS = PlaneTiming{}.startup_s;  // as the real plane's
constexpr double kJoinFrames = 3;      // frames a door handles per joiner (greeting, join, up)
constexpr double kSlowFactor = 20;     // a slow shim's cost per frame
constexpr pid_t kLauncherPid = 4711;   // who sends the launcher's SIGTERM

enum class Ev {
  kFrame, kClosed, kTimer, kFault, kProc, kJoin, kPlace, kHello, kWelcome, kJoinAttack, kPause
};

struct Event {
  double t;
  uint64_t seq;
  Ev kind;
  int shim;
  int from;  // the sender (frames, closes), the fault's index, the timer's generation
  std::shared_ptr<const std::string> frame;
  // kProc: a process of the shim's rank `child` ends with `status`.
  size_t child = 0;
  bool straggler = false;
  uint64_t epoch = 0;
  int status = 0;
};
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.t != b.t ? a.t > b.t : a.seq > b.seq;
  }
};

class Cluster;
void ScheduleProc(Cluster* w, int shim, double at, size_t child, bool straggler, uint64_t epoch,
                  int status);

// One shim: the real overlay's running part and the job's state machine
// (TreeLinks) over simulated links, the real supervisor's state machine
// (NodeMachine) over simulated ranks (SimProcs), and the machine it runs on.
class Shim : public LinkIo, public JobChannel {
 public:
  Shim(Cluster* w, int id, const JobConfig& c, double beat_s, const RankPlan& ranks)
      : tree(c, this, beat_s, kStartupS),
        procs(id, c.ranks.size(), ranks, c.grace_s, kWallEpoch,
              [w, id](double at, size_t child, bool straggler, uint64_t epoch, int status) {
                ScheduleProc(w, id, at, child, straggler, epoch, status);
              }),
        // (The ranks' records looked at as the supervisor does: plane_timing.h.)
        node(NodeConfig{c.ranks.size(), c.grace_s, c.rank >= c.size - c.spares,
                        TimingOf(c.hang_timeout_s, c.flight_recorder).look_every_s,
                        c.flight_recorder},
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

  // JobChannel: the supervisor's machine and the job's talk through it, at
  // the time of the event the shim handles.
  void OnOutput(double now) override { tree.OnOutput(now); }
  void OnChildFailed(const LocalFailure& f) override { machine().OnChildFailed(f, now_); }
  void OnRecords(const std::vector<RankRecord>& records) override {
    machine().OnRecords(records, now_);
  }
  void OnStacks(const std::vector<RankStack>& stacks) override {
    machine().OnStacks(stacks, now_);
  }
  void OnPace(int64_t look, const std::vector<RankTimes>& times) override {
    tree.OnOwnPace(look, times, now_);
  }
  void OnChildrenDone(const NodeOutcome& o) override { machine().OnChildrenDone(o, now_); }
  void OnShimSignalled(int sig, const std::string& why) override {
    machine().OnShimSignalled(sig, why, now_);
  }
  bool MayExit() const override { return machine().MayExit(now_); }
  bool PrintsOwnFailure() const override { return machine().PrintsOwnFailure(); }
  bool WritesJobRecord() const override { return machine().root(); }
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
  bool has_final = false;
  LinkOrder final_order;  // its stop (rank 0's: the job's record)
  std::string join, hello;  // its join and its hello, as the network saw them
  long long handled = 0, bytes = 0;

 private:
  Cluster* w_;
  int id_;
  double now_ = 0;
};

// The orders the job's machine gives this node's, as they are taken.
std::optional<LinkOrder> Shim::TakeOrder() {
  std::optional<LinkOrder> o = machine().TakeOrder();
  if (!o) return o;
  switch (o->kind) {
    case LinkOrder::Kind::kCollectStacks:
      if (collect_order_at < 0) collect_order_at = now_;
      break;
    case LinkOrder::Kind::kEndAttempt:
      if (end_order_at < 0) end_order_at = now_;
      break;
    case LinkOrder::Kind::kRestart:
      ++restart_orders;
      restart_order_at = now_;
      restart_orders_at.push_back(now_);
      if (o->roster) {
        nodes.push_back(o->node_rank);
        maddrs.push_back(o->master_addr);
      }
      break;
    case LinkOrder::Kind::kPaceLook:
      ++pace_orders;
      break;
    case LinkOrder::Kind::kStop:
      procs.stopped = true;
      if (stop_order_at < 0) {
        stop_order_at = now_;
        has_final = true;
        final_order = *o;
      }
      break;
  }
  return o;
}

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
  void Schedule(int shim, double at, size_t child, bool straggler, uint64_t epoch, int status) {
    Event e{at, 0, Ev::kProc, shim, 0, nullptr};
    e.child = child;
    e.straggler = straggler;
    e.epoch = epoch;
    e.status = status;
    Push(std::move(e));
  }

 private:
  void Push(Event e) {
    e.seq = seq_++;
    if ((e.kind == Ev::kFrame || e.kind == Ev::kClosed) && plan_.Busy())
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
  // A link that carries nothing: cut, or across a partition.
  bool Cut(int a, int b) const {
    if (!side_.empty() && side_[static_cast<size_t>(a)] != side_[static_cast<size_t>(b)])
      return true;
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
  std::vector<int> side_;          // each shim's side of a partition (empty: none)
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

void ScheduleProc(Cluster* w, int shim, double at, size_t child, bool straggler, uint64_t epoch,
                  int status) {
  w->Schedule(shim, at, child, straggler, epoch, status);
}

void Shim::Send(int peer, const std::string& frame) { w_->Send(id_, peer, frame); }

std::vector<int> Shim::Below(int shim) const { return w_->Below(shim); }

void Shim::SentDown(const std::string& frame) {
  if (!killed && !exited) w_->NoteVerdict(id_, frame);
}

std::vector<int> Shim::Parents() const { return w_->Parents(); }

bool Shim::Relink(int heir, const std::string& addr, double now) {
  return w_->Relink(id_, heir, addr, now);
}

// The hello that links a shim to the root's heir (a real one, with the
// challenge it answers before it: "\x01CHALLENGE\nHELLO"), ordered with
// what the shim sends after it (the heir takes it as its child when it
// arrives).
const char kRelinkMark = '\x01';

bool Cluster::Relink(int from, int heir, const std::string& addr, double now) {
  Shim& h = *shims_[static_cast<size_t>(heir)];
  Shim& s = *shims_[static_cast<size_t>(from)];
  // Only where the heir listens does it answer (plane_join.cc connects to
  // the address the root named; an empty or wrong one reaches nobody).
  if (addr != ListenAddress(NodeAddr(heir), PortOf(heir))) {
    if (std::getenv("AML_SIM_DEBUG"))
      std::fprintf(stderr, "relink %d -> %d: address '%s', not where it listens\n", from, heir,
                   addr.c_str());
    return false;
  }
  // A frozen heir's kernel would take the connection, but the hello would
  // go unanswered (plane.cc gives up after 5 s): here it fails at once.
  if (h.killed || h.exited || h.frozen || !h.started || Cut(from, heir)) {
    if (std::getenv("AML_SIM_DEBUG"))
      std::fprintf(stderr, "relink %d -> %d: killed %d exited %d frozen %d started %d cut %d\n",
                   from, heir, h.killed, h.exited, h.frozen, h.started, Cut(from, heir));
    return false;
  }
  // The link to the lost parent is closed (plane.cc drops it).
  if (s.parent() >= 0) CloseLink(s, s.parent(), now);
  s.closed.erase(heir);
  h.closed.erase(from);
  // (Connect and challenge first: a round trip and a half; what the shim
  // sends next follows it on the link.)
  const std::string challenge = Nonce();
  const std::string hello = Introduction(prover_, "hello", from, o_.shims, HostOf(from),
                                         PortOf(from), challenge, Nonce())
                                .Encode();
  Push({Arrival(from, heir, hello.size() + 4, now + 2 * lat_s_), 0, Ev::kFrame, heir, from,
        std::make_shared<const std::string>(kRelinkMark + challenge + "\n" + hello)});
  return true;
}

void Cluster::Send(int from, int to, const std::string& frame) {
  const Shim& s = *shims_[static_cast<size_t>(from)];
  if (s.killed || s.exited) return;
  // A real link breaks on a frame over its cap (wire.h).
  if (frame.size() > ControlPlane::kMaxFrame)
    Violate("shim " + std::to_string(from) + " sent a frame of " +
            std::to_string(frame.size()) + " bytes to shim " + std::to_string(to) +
            ", over the links' cap of " + std::to_string(ControlPlane::kMaxFrame));
  if (frame.rfind("{\"t\":\"pace\"", 0) == 0 && frame.find("\"s\":") != std::string::npos)
    record_.pace_bytes_max = std::max<long long>(record_.pace_bytes_max,
                                                 static_cast<long long>(frame.size()));
  if (Cut(from, to)) return;
  const double arrive = Arrival(from, to, frame.size() + 4, now_);
  Push({arrive, 0, Ev::kFrame, to, from, std::make_shared<const std::string>(frame)});
}

// ---- The join (modelled: its round trips and its cost at each door)

// What a shim's ranks do, from the plan (fault_plan.h).
RankPlan Cluster::RanksOf(int shim) const {
  RankPlan r;
  r.prints = !plan_.quiet;
  r.run_s = plan_.run_s;
  for (const Fault& f : plan_.faults) {
    if (f.shim != shim) continue;
    if (f.kind == FaultKind::kFail) {
      r.first_fail = r.first_fail < 0 ? f.at_s : std::min(r.first_fail, f.at_s);
      r.refail = !plan_.restarts_succeed;
    }
    if (f.kind == FaultKind::kStubbornRanks) r.stubborn = true;
    if (f.kind == FaultKind::kStraggler) r.straggler = true;
  }
  r.skip = plan_.quiet && plan_.skip == shim;
  r.nodump = plan_.nodump == shim;
  r.dump_timeout_s = kSimDumpTimeoutS;
  r.pace = plan_.pace;
  r.slow = plan_.pace_slow == shim;
  r.step_s = plan_.step_s;
  r.jitter = plan_.jitter;
  r.factor = plan_.pace_slow >= 0 ? plan_.factor : 1;
  r.burst = std::max(1, plan_.burst);
  r.stall = plan_.pace_stall == shim;
  r.stall_s = plan_.pace_stall >= 0 ? FaultPlan::kStallS : 0;
  r.stall_every = plan_.StallEvery();
  r.hiccup_s = plan_.pace_stall >= 0 ? plan_.HiccupS() : 0;
  r.hiccup_every = FaultPlan::kHiccupEvery;
  r.skew_s = SkewOf(shim);
  r.seed = o_.seed;
  return r;
}

// A shim's clock skew (--faults pace): drawn from the seed, within
// +-skew_s of the plan.
double Cluster::SkewOf(int shim) const {
  if (plan_.skew_s <= 0) return 0;
  uint64_t h = (o_.seed + 1) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(shim) * 0xff51afd7ed558ccdULL;
  h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return plan_.skew_s * (static_cast<double>(h % 2001) / 1000.0 - 1);
}

void Cluster::Build() {
  const int n = o_.shims;
  for (int i = 0; i < n; ++i) {
    JobConfig c;
    c.rank = i;
    c.size = n;
    c.node = i;
    c.host = HostOf(i);
    c.ranks = {i};
    c.world_ranks = n;
    if (hang_s_ > 0) c.hang_timeout_s = hang_s_;
    // The flight recorder as with --hang-timeout: its records harvested,
    // the hang's culprit named (its default --dump-timeout).
    c.flight_recorder = hang_s_ > 0 || plan_.pace;
    c.dump_timeout_s = kSimDumpTimeoutS;
    c.pace_every_s = plan_.pace ? FaultPlan::kPaceEveryS : 0;
    c.grace_s = o_.grace_s;
    c.run_id = "sim-" + std::to_string(o_.seed);
    c.max_restarts = plan_.max_restarts;
    c.spares = plan_.spares;
    c.retire_after = FaultPlan::kRetireAfter;
    c.world_ranks = n - plan_.spares;
    c.node_check = [this, i] { return Unfit(i); };
    auto s = std::make_unique<Shim>(this, i, c, beat_s_, RanksOf(i));
    s->cost_s = cost_s_;
    s->skew_s = SkewOf(i);
    shims_.push_back(std::move(s));
  }
  for (const Fault& f : plan_.faults)
    if (f.kind == FaultKind::kSlow) shims_[static_cast<size_t>(f.shim)]->cost_s *= kSlowFactor;
  // Rank 0's planner, as plane_join.cc makes it.
  planner_ = std::make_unique<TreePlanner>(o_.fanout, kRootNode, "", PortOf(0));
  // Every shim's process starts within the first millisecond; each asks
  // rank 0 for its place: connect, greeting and challenge take 1.5 round
  // trips before its join arrives.
  std::mt19937_64 rng(o_.seed ^ 0x5eed);
  for (int i = 1; i < n; ++i) {
    const double start = std::uniform_real_distribution<double>(0, 1e-3)(rng);
    Push({start + 3 * lat_s_, 0, Ev::kJoin, 0, i, nullptr});
  }
  if (n == 1) Push({0, 0, Ev::kJoin, 0, 0, nullptr});
  // A stranger's join and a replayed one come to rank 0's MASTER_PORT while
  // the shims join.
  for (size_t i = 0; i < plan_.faults.size(); ++i) {
    const FaultKind k = plan_.faults[i].kind;
    if (n > 1 && (k == FaultKind::kStranger || k == FaultKind::kReplay))
      Push({std::uniform_real_distribution<double>(2 * lat_s_, 1e-3)(rng) + 3 * lat_s_, 0,
            Ev::kJoinAttack, 0, static_cast<int>(i), nullptr});
  }
}

std::string Cluster::Nonce() {
  static const char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (char& c : out) c = kHex[nonces_() & 15];
  return out;
}

// ---- The doors (door.h): the real decisions, over the simulated links

// A shim's join at rank 0's MASTER_PORT: its proof for the connection's
// challenge, rank 0's place for it with the proof back.
void Cluster::Join(Shim& root, Shim& j, double at) {
  const std::string challenge = Nonce(), nonce = Nonce();
  const int n = o_.shims;
  j.join = Introduction(prover_, "join", j.id(), n, HostOf(j.id()), PortOf(j.id()), challenge,
                        nonce)
               .Encode();
  const Visitor v = ReadJoin(prover_, n, challenge, j.join);
  if (!v.ok) return Violate("rank 0's door refused shim " + std::to_string(j.id()) + ": " + v.why);
  // Where rank 0 places it, from the address its join came from (as
  // plane_join.cc does).
  const TreePlace p =
      PlaceJoiner(planner_.get(), &root.machine(), v, NodeAddr(j.id()), NodeAddr(0));
  Msg place = DoorAnswer(prover_, "place", "join", challenge, v);
  place.Set("parent", p.parent).Set("addr", p.addr).Set("port", p.port).Set("depth", p.depth);
  auto back = Msg::Decode(place.Encode());
  if (!back.ok() || !ProvesDoor(prover_, "join", *back, challenge, nonce, j.id()))
    return Violate("shim " + std::to_string(j.id()) + " found rank 0's place without its proof");
  const int parent = static_cast<int>(back->Int("parent"));
  const std::string where =
      ListenAddress(back->Str("addr"), static_cast<int>(back->Int("port")));
  // It connects where the place says: its parent must listen there.
  if (parent < 0 || parent >= n || where != ListenAddress(NodeAddr(parent), PortOf(parent)))
    return Violate("rank 0 placed shim " + std::to_string(j.id()) + " under shim " +
                   std::to_string(parent) + " at " + where + ", where that shim does not listen");
  j.tree.SetParent(parent, where);
  j.tree.set_depth(static_cast<int>(back->Int("depth")));
  Push({at + lat_s_, 0, Ev::kPlace, j.id(), 0, nullptr});
}

// A shim's hello at its parent's port.
void Cluster::Hello(Shim& s, Shim& j, double at) {
  const std::string challenge = Nonce(), nonce = Nonce();
  j.hello = Introduction(prover_, "hello", j.id(), o_.shims, HostOf(j.id()), PortOf(j.id()),
                         challenge, nonce)
                .Encode();
  const Visitor v =
      ReadHello(prover_, o_.shims, challenge, j.hello, [&](int r) { return Linked(s, r); });
  if (!v.ok)
    return Violate("shim " + std::to_string(s.id()) + "'s door refused its child " +
                   std::to_string(j.id()) + ": " + v.why);
  s.tree.AddChild(v.rank, v.host, ListenAddress(NodeAddr(j.id()), v.port), at);
  join_order_.push_back(v.rank);
  auto welcome = Msg::Decode(DoorAnswer(prover_, "welcome", "tree", challenge, v).Encode());
  if (!welcome.ok() || !ProvesDoor(prover_, "tree", *welcome, challenge, nonce, j.id()))
    return Violate("shim " + std::to_string(j.id()) + " found its parent's welcome without its "
                   "proof");
  Push({at + lat_s_, 0, Ev::kWelcome, j.id(), s.id(), nullptr});
}

// While shims join: a stranger's join (another secret), or a real shim's
// join sent again on a new connection. Both must be refused.
void Cluster::AtJoinDoor(const Fault& f) {
  const std::string challenge = Nonce(), nonce = Nonce();
  std::string frame;
  if (f.kind == FaultKind::kStranger) {
    frame = Introduction(stranger_, "join", 1, o_.shims, "stranger", 1, challenge, nonce).Encode();
  } else {
    for (const auto& sp : shims_)
      if (!sp->join.empty()) frame = sp->join;
    if (frame.empty()) return;  // nobody joined yet: nothing seen to replay
  }
  const Visitor v = ReadJoin(prover_, o_.shims, challenge, frame);
  if (v.ok)
    Violate(std::string("rank 0's door let in a ") +
            (f.kind == FaultKind::kStranger ? "stranger's join" : "replayed join") + " as rank " +
            std::to_string(v.rank));
}

// While the job runs, at a shim's port: a stranger's hello, a shim's hello
// seen on the network and sent again, or a second hello (with the job's
// proof) for a rank already linked. Each must be refused: let in, it could
// speak for that rank (a forged "lost" stops every node: test_replay).
void Cluster::AtTreeDoor(const Fault& f, double now) {
  Shim& target = *shims_[static_cast<size_t>(f.shim)];
  const std::string challenge = Nonce(), nonce = Nonce();
  std::string frame, what;
  Shim* door = nullptr;
  if (f.kind == FaultKind::kStranger) {
    door = &target;
    const std::vector<int> kids = target.tree.children();
    const int claims = kids.empty() ? std::max(1, f.shim) : kids.front();
    frame = Introduction(stranger_, "hello", claims, o_.shims, "stranger", 1, challenge, nonce)
                .Encode();
    what = "a stranger's hello";
  } else {
    if (target.parent() < 0) return;
    door = shims_[static_cast<size_t>(target.parent())].get();
    if (f.kind == FaultKind::kReplay) {
      frame = target.hello;
      what = "a replayed hello";
    } else {
      // A twin of a rank still linked (one that left may take its seat again).
      if (!Linked(*door, target.id())) return;
      frame = Introduction(prover_, "hello", target.id(), o_.shims, "twin", 1, challenge, nonce)
                  .Encode();
      what = "a second hello for a linked rank";
    }
  }
  if (door->exited || door->killed || door->frozen || frame.empty()) return;
  Effective(*door, now, 2 * door->cost_s);
  const Visitor v =
      ReadHello(prover_, o_.shims, challenge, frame, [&](int r) { return Linked(*door, r); });
  if (v.ok)
    Violate("shim " + std::to_string(door->id()) + "'s door let in " + what + " as rank " +
            std::to_string(v.rank));
}

// ---- The overlay's running part: plane.cc's TreeLinks

void Cluster::OnFrame(Shim& s, int from, const std::string& frame, double now) {
  ++s.handled;
  s.bytes += static_cast<long long>(frame.size());
  if (!frame.empty() && frame[0] == kRelinkMark) {
    // A child of the lost root at the heir's door (door.h: the same checks).
    const size_t nl = frame.find('\n');
    const std::string challenge = frame.substr(1, nl - 1);
    const Visitor v = ReadHello(prover_, o_.shims, challenge, frame.substr(nl + 1),
                                [&](int r) { return Linked(s, r); });
    if (!v.ok || v.rank != from)
      return Violate("shim " + std::to_string(s.id()) + "'s door refused shim " +
                     std::to_string(from) + " linking to it as the root's heir: " + v.why);
    s.closed.erase(from);
    s.tree.AddChild(from, v.host, ListenAddress(NodeAddr(from), v.port), now);
    return;
  }
  if (from == s.parent()) {
    s.tree.OnParentFrame(frame, now);
    if (s.tree.go() && !s.started) Go(s, now);
    return;
  }
  s.tree.OnChildFrame(from, frame, now);
  // A child done or lost: its link is closed (plane.cc forgets it).
  if (!s.tree.Keeps(from)) CloseLink(s, from, now);
  if (s.id() == 0 && !s.started && s.tree.all_up()) {
    s.tree.set_depth(planner_->depth());
    s.tree.SendDown(Msg("go").Encode());
    Go(s, now);
  }
}

void Cluster::CloseLink(Shim& s, int peer, double now, double late) {
  if (s.closed.count(peer)) return;
  s.closed.insert(peer);
  // The close follows what was sent before it on the link.
  if (!Cut(s.id(), peer))
    Push({Arrival(s.id(), peer, 0, now) + late, 0, Ev::kClosed, peer, s.id(), nullptr});
}

void Cluster::CloseFinished(Shim& s, double now) {
  for (int c : s.tree.children())
    if (!s.tree.Keeps(c)) CloseLink(s, c, now);
}

void Cluster::OnClosed(Shim& s, int from, double now) {
  s.closed.insert(from);
  if (from == s.parent()) s.tree.OnParentClosed("closed", now);
  else s.tree.OnChildClosed(from, "closed", now);
}

// The job starts here: the links' clocks, and the supervisor's first attempt.
void Cluster::Go(Shim& s, double now) {
  s.started = true;
  if (s.id() == 0) root_go_ = now;
  s.set_now(now);
  s.tree.Start(now);
  go_all_ = std::max(go_all_, now);
  s.procs.set_origin(root_go_);
  s.node.Start(now);
}

// ---- Ranks (sim_node.h): a process's end, as the supervisor reaps it

void Cluster::OnProc(Shim& s, const Event& e, double now) {
  int status = 0;
  if (!s.procs.Fire(e.child, e.straggler, e.epoch, e.status, &status)) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    if (first_fail_ < 0) first_fail_ = now;
    causes_.push_back(now);
  }
  s.node.OnExit(e.child, status, now);
}

// After every event a shim handles, what its real loop does (supervisor.cc):
// the links' timers, the job's orders, the supervisor's machine's step, and
// its exit or its next wake-up.
void Cluster::Wake(Shim& s, double now, bool woke_by_timer) {
  if (!s.started) return;
  // Back from a pause (--faults busy): what came meanwhile is read first,
  // as the real loop's first poll after it reads every link before
  // OnTimer; the last of it wakes the shim.
  if (!s.inbox.empty() && *s.inbox.begin() <= s.paused_until) return;
  s.set_now(now);
  // Ranks that print write at least once between two of its wake-ups.
  if (s.procs.AnyPrinting()) s.tree.OnOutput(now);
  s.tree.OnTimer(now);
  CloseFinished(s, now);
  s.node.TakeOrders(now);
  if (!s.node.Step(now)) return Exit(s, now);
  if (!s.procs.violation.empty()) Violate(s.procs.violation);
  if (s.restart_orders > plan_.max_restarts)
    Violate("shim " + std::to_string(s.id()) + " made " + std::to_string(s.restart_orders) +
            " restarts, over --max-restarts " + std::to_string(plan_.max_restarts));
  const JobState st = s.machine().state();
  if (s.last_state == JobState::kElecting && st != JobState::kElecting) TookOver(s);
  s.last_state = st;
  const bool waits = st == JobState::kDeciding || st == JobState::kCollecting ||
                     st == JobState::kBackingOff || st == JobState::kElecting ||
                     (st == JobState::kEnding && s.machine().root());
  if (waits && s.machine().NextDeadline(now) >= now + 3600)
    Violate("shim " + std::to_string(s.id()) + " waits in state " + JobStateName(st) +
            " without a deadline");
  double next = std::min(s.tree.NextDeadline(now), s.node.NextDeadline(now));
  next = std::max(next, now);
  // A shim whose next deadline is always now spins: its loop wakes with
  // nothing to read and finds the deadline still due (a backlog of frames
  // is work, not a spin: the real loop runs its timers after each read).
  if (next <= now && woke_by_timer) {
    if (++s.spins > 1000) {
      Violate("shim " + std::to_string(s.id()) + " spins in state " + JobStateName(st) + "/" +
              NodeStateName(s.node.state()) + " (its next deadline is always now)");
      return;
    }
  } else {
    s.spins = 0;
  }
  if (s.timer_at >= now && s.timer_at <= next) return;  // one already comes in time
  s.timer_at = next;
  Push({next, 0, Ev::kTimer, s.id(), static_cast<int>(++s.timer_gen), nullptr});
}

void Cluster::Exit(Shim& s, double now) {
  if (std::getenv("AML_SIM_DEBUG")) std::fprintf(stderr, "exit %d at %.3f: %s (parent %d)\n", s.id(), now, s.final_order.message.c_str(), s.parent());
  s.exited = true;
  s.exit_at = now;
  s.exit_code = s.node.ExitCode();  // the supervisor's own rule
  // Nobody exits while a shim below still runs its part, unless lost.
  const double stopped = s.stop_order_at >= 0 ? s.stop_order_at : s.signalled_at;
  for (int c : s.tree.children()) {
    const Shim& kid = *shims_[static_cast<size_t>(c)];
    if (!s.tree.Keeps(c) || kid.exited || dead_.count(c)) continue;
    if (kid.machine().state() == JobState::kDone) continue;
    // (At its deadline it may go, a busy shim below being later: `stopped`
    // is when the node took the order, the frames' handling after the
    // machine's stop, whose deadline MayExit keeps.)
    if (stopped < 0 || now < stopped + o_.grace_s + kFlushS - 0.01)
      Violate("shim " + std::to_string(s.id()) + " exited while shim " + std::to_string(c) +
              " below it still ran (in state " + JobStateName(kid.machine().state()) + ")");
  }
  // Its links close.
  if (s.parent() >= 0 && !s.tree.parent_lost()) CloseLink(s, s.parent(), now);
  for (int c : s.tree.children())
    if (s.tree.Keeps(c)) CloseLink(s, c, now);
}

void Cluster::OnFault(const Fault& f, double now) {
  if (f.kind == FaultKind::kPartition) {
    // Its shims keep running and their links stay open; nothing crosses.
    if (side_.empty()) side_.assign(shims_.size(), 0);
    for (int g : f.group) {
      side_[static_cast<size_t>(g)] = static_cast<int>(&f - plan_.faults.data()) + 1;
      faulted_.insert(g);
    }
    if (loss_at_ < 0) loss_at_ = now;
    causes_.push_back(now);
    return;
  }
  if (f.kind == FaultKind::kStranger || f.kind == FaultKind::kReplay ||
      f.kind == FaultKind::kTwin)
    return AtTreeDoor(f, now);
  if (f.kind == FaultKind::kBusy) {
    for (const auto& sp : shims_)
      if (f.shim == Fault::kAll || sp->id() == f.shim)
        Push({now, 0, Ev::kPause, sp->id(), 0, nullptr});
    return;
  }
  // "the root": the shim that holds the job now.
  Shim& s = *shims_[static_cast<size_t>(f.shim == Fault::kRoot ? job_root_ : f.shim)];
  if (s.exited || s.killed) return;
  switch (f.kind) {
    case FaultKind::kFreeze:
      if (s.frozen) return;
      s.frozen = true;
      faulted_.insert(s.id());
      dead_.insert(s.id());
      if (loss_at_ < 0) loss_at_ = now;
      causes_.push_back(now);
      break;
    case FaultKind::kKill:
      s.killed = true;
      faulted_.insert(s.id());
      dead_.insert(s.id());
      if (loss_at_ < 0) loss_at_ = now;
      causes_.push_back(now);
      if (s.parent() >= 0) CloseLink(s, s.parent(), now, Late());
      for (int c : s.tree.children()) CloseLink(s, c, now, Late());
      break;
    case FaultKind::kCut:
      if (s.parent() < 0) return;
      cut_.insert({std::min(s.id(), s.parent()), std::max(s.id(), s.parent())});
      faulted_.insert(s.id());
      if (loss_at_ < 0) loss_at_ = now;
      causes_.push_back(now);
      break;
    case FaultKind::kSigterm: {
      if (s.frozen || s.signalled_at >= 0) return;
      s.signalled_at = now;
      s.procs.stopped = true;
      const double at = Effective(s, now, 0);
      s.set_now(at);
      s.node.OnSignal(SIGTERM, kLauncherPid, at);
      Wake(s, at);
      break;
    }
    default:
      break;  // fail, slow, stubborn, straggler: part of the ranks and of the cost
  }
}

// A heir left "electing": it took the job, or its part ended. Never two
// roots: a heir takes the job only once the old root, alive on the other
// side of a cut, has ended its part.
void Cluster::TookOver(const Shim& s) {
  const JobState st = s.machine().state();
  if (st == JobState::kStopped || st == JobState::kSignalled) return;
  for (const auto& op : shims_) {
    const Shim& o = *op;
    if (o.id() == s.id() || !o.machine().root() || o.exited || dead_.count(o.id())) continue;
    const JobState os = o.machine().state();
    // (A heir still electing holds nothing: only one side can gather more
    // than half of the shims.)
    if (os == JobState::kStopped || os == JobState::kSignalled || os == JobState::kElecting)
      continue;
    return Violate("two roots: shim " + std::to_string(s.id()) + " took the job at " +
                   FormatNumber(now_ - root_go_, "%.3f") + " s while shim " +
                   std::to_string(o.id()) + " still held it (state " + JobStateName(os) + ")");
  }
  job_root_ = s.id();
  record_.takeovers.push_back(now_ - root_go_);
}

void Cluster::Violate(const std::string& what) {
  if (violation_.empty()) violation_ = what;
}

// The root's verdicts, each once (as it sends it down to every child).
void Cluster::NoteVerdict(int from, const std::string& frame) {
  // The job's root's alone: not a heir's while it is electing (until it
  // took the job, its word is its part's), nor a relay's. A heir's first
  // word once it took the job makes it the job's root.
  if (from != job_root_) {
    const Shim& s = *shims_[static_cast<size_t>(from)];
    if (!s.machine().root() || s.machine().state() == JobState::kElecting) return;
    TookOver(s);
    if (from != job_root_) return;
  }
  if (frame.find("\"beat\"") != std::string::npos) return;
  auto m = Msg::Decode(frame);
  if (!m.ok()) return;
  const std::string& t = m->type();
  if (t == "stop" || t == "end" || t == "restart" || t == "halt" || t == "collect" || t == "bye")
    record_.verdicts.emplace_back(now_ - root_go_, frame);
}

// ---- The run

namespace {
// Adds the calling thread's CPU time within its scope to *sum (none when
// sum is null).
class RootCpu {
 public:
  explicit RootCpu(double* sum) : sum_(sum) {
    if (sum_) t0_ = Now();
  }
  ~RootCpu() {
    if (sum_) *sum_ += Now() - t0_;
  }
  RootCpu(const RootCpu&) = delete;
  RootCpu& operator=(const RootCpu&) = delete;

 private:
  static double Now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  }
  double* sum_;
  double t0_ = 0;
};
}  // namespace

SimResult Cluster::Run() {
  const auto wall0 = std::chrono::steady_clock::now();
  Build();
  bool faults_pushed = false;
  while (!q_.empty()) {
    Event e = q_.top();
    q_.pop();
    now_ = e.t;
    if (now_ > o_.limit_s) break;
    ++events_;
    if (e.kind == Ev::kFault) {
      OnFault(plan_.faults[static_cast<size_t>(e.from)], now_);
      continue;
    }
    Shim& s = *shims_[static_cast<size_t>(e.shim)];
    if ((e.kind == Ev::kFrame || e.kind == Ev::kClosed) && plan_.Busy())
      s.inbox.erase(s.inbox.find(e.t));
    if (s.exited || s.killed || s.frozen) continue;
    RootCpu cpu(e.shim == 0 ? &rank0_cpu_s_ : nullptr);
    switch (e.kind) {
      case Ev::kJoin: {
        // At rank 0's door: the joiner's greeting, join and proof.
        if (e.from == 0) {  // one shim alone
          Go(s, now_);
          Wake(s, now_);
          break;
        }
        const double at = Effective(s, now_, kJoinFrames * s.cost_s);
        s.handled += 2;
        Join(s, *shims_[static_cast<size_t>(e.from)], at);
        break;
      }
      case Ev::kPlace:
        // Connect to the parent: 1.5 round trips to its hello.
        Push({now_ + 3 * lat_s_, 0, Ev::kHello, s.parent(), s.id(), nullptr});
        break;
      case Ev::kHello: {
        const double at = Effective(s, now_, 2 * s.cost_s);
        s.handled += 2;
        Hello(s, *shims_[static_cast<size_t>(e.from)], at);
        break;
      }
      case Ev::kWelcome:
        now_ = Effective(s, now_, s.cost_s);
        s.tree.SendUp(Msg("up").Set("rank", s.id()).Set("host", HostOf(s.id())).Encode());
        break;
      case Ev::kFrame: {
        const double at = Effective(s, now_, s.cost_s);
        now_ = at;
        s.set_now(at);
        OnFrame(s, e.from, *e.frame, at);
        Wake(s, at);
        break;
      }
      case Ev::kClosed: {
        const double at = Effective(s, now_, s.cost_s);
        now_ = at;
        s.set_now(at);
        OnClosed(s, e.from, at);
        Wake(s, at);
        break;
      }
      case Ev::kTimer: {
        if (static_cast<uint64_t>(e.from) != s.timer_gen) break;
        if (s.busy_until > now_ + 1e-9 && plan_.Busy()) {
          // Descheduled when it was due: it runs once the pause is over,
          // after what came meanwhile was read (Wake).
          Push({s.busy_until, 0, Ev::kTimer, s.id(), e.from, nullptr});
          break;
        }
        s.timer_at = -1;
        const double at = Effective(s, now_, 0);
        now_ = at;
        Wake(s, at, true);
        break;
      }
      case Ev::kProc: {
        const double at = Effective(s, now_, 0);
        now_ = at;
        s.set_now(at);
        OnProc(s, e, at);
        Wake(s, at);
        break;
      }
      case Ev::kJoinAttack:
        if (!s.started) AtJoinDoor(plan_.faults[static_cast<size_t>(e.from)]);
        break;
      case Ev::kPause: {
        // A busy shim descheduled (--faults busy): nothing of it runs until
        // the pause is over; the next one comes 1 to 8 s after.
        const double pause =
            std::uniform_real_distribution<double>(0.2, FaultPlan::kBusyPauseS)(pauses_);
        s.busy_until = std::max(s.busy_until, now_ + pause);
        s.paused_until = s.busy_until;
        const double gap = std::uniform_real_distribution<double>(1, 8)(pauses_);
        Push({now_ + pause + gap, 0, Ev::kPause, s.id(), 0, nullptr});
        break;
      }
      case Ev::kFault:
        break;
    }
    if (!faults_pushed && shims_[0]->started) {
      // Faults count from rank 0's go (which may be at 0: one shim alone).
      faults_pushed = true;
      for (size_t i = 0; i < plan_.faults.size(); ++i)
        Push({root_go_ + plan_.faults[i].at_s, 0, Ev::kFault, -1, static_cast<int>(i), nullptr});
    }
  }
  SimResult r;
  r.shims = o_.shims;
  r.fanout = o_.fanout;
  r.seed = o_.seed;
  r.faults = plan_.name;
  r.plan = plan_.Describe();
  r.events = events_;
  r.rank0_cpu_s = rank0_cpu_s_;
  if (o_.frames)
    for (const auto& sp : shims_) {
      std::string list;
      for (const auto& [type, n] : sp->tree.frames())
        list += (list.empty() ? "" : " ") + type + "=" + std::to_string(n);
      r.frames.push_back(list);
    }
  Check(&r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

void Cluster::Check(SimResult* r) {
  const Shim& root = *shims_[static_cast<size_t>(job_root_)];
  record_.root = job_root_;
  r->join_s = go_all_;
  for (const auto& s : shims_) r->depth = std::max(r->depth, s->tree.depth());
  r->restarts = root.restart_orders;
  for (const auto& [shim, n] : root.machine().judge().nodes())
    if (n.named_look >= 0)
      r->named += (r->named.empty() ? "" : ",") + std::to_string(shim) + "@look" +
                  std::to_string(n.named_look);
  r->pace_looks = root.machine().judge().looks();
  r->pace_part_bytes = record_.pace_bytes_max;
  r->rank0_msgs = root.handled;
  r->rank0_bytes = root.bytes;
  r->exit_code = root.exit_code;
  std::vector<double> stops;
  double last_restart = -1, end = 0;
  for (const auto& sp : shims_) {
    const Shim& s = *sp;
    r->msgs_max_per_shim = std::max(r->msgs_max_per_shim, s.handled);
    for (const std::string& move : s.machine().stray_moves())
      Violate("shim " + std::to_string(s.id()) + " moved " + move +
              ", a move the job's table lacks (shim/control/job_states.cc)");
    if (dead_.count(s.id())) continue;
    if (!s.exited) {
      if (std::getenv("AML_SIM_DEBUG")) {  // where it waits, and for whom
        std::fprintf(stderr, "never ended: shim %d, job %s, node %s, parent %d, children:", s.id(),
                     JobStateName(s.machine().state()), NodeStateName(s.node.state()), s.parent());
        for (int c : s.tree.children())
          std::fprintf(stderr, " %d%s", c, s.tree.Keeps(c) ? "" : " (done or lost)");
        std::fprintf(stderr, "\n");
      }
      Violate("shim " + std::to_string(s.id()) + " never ended (state " +
              JobStateName(s.machine().state()) + " at " + FormatNumber(o_.limit_s, "%.0f") +
              " s)");
      continue;
    }
    end = std::max(end, s.exit_at);
    const double stopped = std::min(s.stop_order_at < 0 ? 1e18 : s.stop_order_at,
                                    s.end_order_at < 0 ? 1e18 : s.end_order_at);
    if (first_fail_ >= 0 && stopped < 1e18) stops.push_back(stopped - first_fail_);
    if (s.restart_order_at >= 0) last_restart = std::max(last_restart, s.restart_order_at);
    if (s.has_final && !s.final_order.attempts_json.empty() && !s.machine().root())
      Violate("shim " + std::to_string(s.id()) + " was given the job's record (failure.json)");
  }
  if (violation_.empty() && plan_.spares > 0) CheckRosters();
  // What must have happened (oracle.h), and what did.
  if (violation_.empty()) {
    OracleSetup setup;
    setup.grace_s = o_.grace_s;
    setup.beat_s = beat_s_;
    setup.hang_s = hang_s_;
    setup.startup_s = kStartupS;
    setup.term_s = SimProcs::kTermS;
    double cost = 0;
    for (const auto& sp : shims_) cost = std::max(cost, sp->cost_s);
    setup.slack_s = 0.2 + 4 * static_cast<double>(shims_.size()) * cost;
    // A busy shim answers up to a pause late (a word down the tree, at each
    // level, and one more below a new root), and its allowances for its
    // links grow with the gaps its pauses made (oracle.h).
    if (plan_.Busy()) {
      setup.busy_s = FaultPlan::kBusyPauseS;
      setup.slack_s += FaultPlan::kBusyPauseS * (planner_->depth() + 2);
    }
    // The tree as the join made it (a shim linked to a new root since has
    // another parent now).
    setup.parent = Parents();
    setup.join_order = join_order_;
    for (const auto& sp : shims_) {
      ShimRecord rec;
      rec.exited = sp->exited;
      rec.dead = dead_.count(sp->id()) > 0;
      rec.code = sp->exit_code;
      auto rel = [&](double t) { return t < 0 ? -1 : t - root_go_; };
      rec.exit_at = rel(sp->exit_at);
      rec.stop_at = rel(std::min(sp->stop_order_at < 0 ? 1e18 : sp->stop_order_at,
                                 sp->end_order_at < 0 ? 1e18 : sp->end_order_at));
      if (rec.stop_at > 1e17) rec.stop_at = -1;
      rec.verdict_at = rel(sp->stop_order_at);
      rec.signalled_at = rel(sp->signalled_at);
      record_.shims.push_back(rec);
    }
    record_.restarts = root.restart_orders;
    // The straggler check's verdicts (--faults pace): each node named, and
    // in which look.
    for (const auto& [shim, n] : root.machine().judge().nodes())
      if (n.named_look >= 0) record_.named[shim] = n.named_look;
    record_.pace_looks = root.machine().judge().looks();
    record_.has_final = root.has_final;
    if (root.has_final) record_.final_order = root.final_order;
    record_.first_failure_at = first_fail_ < 0 ? -1 : first_fail_ - root_go_;
    if (std::getenv("AML_SIM_EXPLAIN")) {
      // What rank 0 decided, and each shim's end, beside the foreseen outcomes.
      for (const auto& [at, frame] : record_.verdicts)
        std::fprintf(stderr, "rank 0 at %.3f s: %s\n", at, frame.substr(0, 300).c_str());
      if (root.has_final)
        std::fprintf(stderr, "rank 0's record: %s%s\n", root.final_order.message.c_str(),
                     root.final_order.trailer.c_str());
      for (size_t s = 0; s < record_.shims.size(); ++s)
        std::fprintf(stderr, "shim %zu: %s %d at %.3f s\n", s,
                     record_.shims[s].exited ? "exited" : "did not exit", record_.shims[s].code,
                     record_.shims[s].exit_at);
    }
    const std::string broken = CheckRun(plan_, setup, record_);
    if (!broken.empty()) Violate(broken);
  }
  r->end_s = end;
  r->stop_p99_s = Percentile(stops, 0.99);
  r->stop_max_s = stops.empty() ? -1 : *std::max_element(stops.begin(), stops.end());
  if (loss_at_ >= 0 && root.stop_order_at >= loss_at_) r->lost_detect_s = root.stop_order_at - loss_at_;
  // The roll-call is printed with the stop (or, restarts left, the end) it orders.
  if (root.collect_order_at >= 0) {
    double printed = 1e18;
    for (double t : {root.stop_order_at, root.end_order_at})
      if (t >= root.collect_order_at) printed = std::min(printed, t);
    if (printed < 1e18) r->rollcall_s = printed - root.collect_order_at;
  }
  if (first_fail_ >= 0 && last_restart >= 0) r->restart_round_s = last_restart - first_fail_;
  if (plan_.spares > 0) r->replace_s = ReplaceSeconds();
  if (job_root_ != 0) r->new_root = job_root_;
  if (!violation_.empty())
    r->invariants = violation_ + " (replay: " + Replay() + ")";
}

// --spares: each attempt runs exactly the world's ranks. Every restart
// order gives each NODE_RANK to one shim that is alive, that no earlier
// order dropped (retired) and that was not lost; a shim starts ranks only
// in an attempt whose order gives it a NODE_RANK (a spare or a retired
// shim starts none), and it starts them under the NODE_RANK it was given.
void Cluster::CheckRosters() {
  const int n = o_.shims, nodes = n - plan_.spares;
  std::vector<std::vector<int>> rosters(1);
  for (int s = 0; s < nodes; ++s) rosters[0].push_back(s);
  std::map<int, std::vector<std::vector<int>>> by_restart;  // restart n: its orders' rosters
  std::set<int> dropped;
  for (const auto& [at, frame] : record_.verdicts) {
    auto m = Msg::Decode(frame);
    if (!m.ok() || m->type() != "restart") continue;
    const std::vector<int> holders = Roster::Decode(m->Str("nodes"));
    if (static_cast<int>(holders.size()) != nodes)
      return Violate("restart order at " + FormatNumber(at, "%.3f") + " s lists " +
                     std::to_string(holders.size()) + " NODE_RANKs, not " +
                     std::to_string(nodes));
    std::set<int> seen;
    for (int node = 0; node < nodes; ++node) {
      const int h = holders[static_cast<size_t>(node)];
      if (h < 0 || !seen.insert(h).second)
        return Violate("restart order at " + FormatNumber(at, "%.3f") + " s gives NODE_RANK " +
                       std::to_string(node) + " to " +
                       (h < 0 ? std::string("no shim") : "shim " + std::to_string(h) + " twice") +
                       " ('" + m->Str("nodes") + "')");
      if (dropped.count(h))
        return Violate("restart order at " + FormatNumber(at, "%.3f") + " s gives NODE_RANK " +
                       std::to_string(node) + " to shim " + std::to_string(h) +
                       ", retired before");
    }
    for (int h : rosters.back())
      if (!seen.count(h)) dropped.insert(h);
    // MASTER_ADDR moves with NODE_RANK 0 to where its new holder's node is
    // (the address rank 0's door saw it come from; "" on rank 0's node).
    const int h0 = holders[0];
    const std::string maddr = h0 == 0 || NodeAddr(h0) == NodeAddr(0) ? "" : NodeAddr(h0);
    if (m->Str("maddr") != maddr)
      return Violate("restart order at " + FormatNumber(at, "%.3f") + " s gives MASTER_ADDR '" +
                     m->Str("maddr") + "'; NODE_RANK 0's holder, shim " + std::to_string(h0) +
                     ", is at '" + maddr + "'");
    rosters.push_back(holders);
    by_restart[static_cast<int>(m->Int("n"))].push_back(holders);
  }
  // Each attempt's rosters: a new root's restart for an attempt whose old
  // root's restart reached no one (a partition cut it off first) is another
  // roster for the same attempt; a shim took one of them (seed 310398946).
  auto alts = [&](size_t attempt) {
    if (attempt == 0) return std::vector<std::vector<int>>{rosters[0]};
    auto it = by_restart.find(static_cast<int>(attempt));
    return it == by_restart.end() ? std::vector<std::vector<int>>{rosters.back()} : it->second;
  };
  auto maddr_of = [&](const std::vector<int>& r) {
    const int h0 = r[0];
    return h0 == 0 || NodeAddr(h0) == NodeAddr(0) ? std::string() : NodeAddr(h0);
  };
  for (const auto& sp : shims_) {
    const Shim& s = *sp;
    for (int a : s.procs.started_attempts) {
      if (a >= static_cast<int>(rosters.size())) continue;
      bool in = false;
      for (const std::vector<int>& r : alts(static_cast<size_t>(a)))
        in = in || std::find(r.begin(), r.end(), s.id()) != r.end();
      if (!in)
        return Violate("shim " + std::to_string(s.id()) + " started ranks in attempt " +
                       std::to_string(a + 1) + ", which gives it no NODE_RANK");
    }
    for (size_t k = 0; k < s.maddrs.size() && k + 1 < rosters.size(); ++k) {
      const std::vector<std::vector<int>> rs = alts(k + 1);
      bool ok = false;
      for (const std::vector<int>& r : rs) ok = ok || s.maddrs[k] == maddr_of(r);
      if (!ok)
        return Violate("shim " + std::to_string(s.id()) + "'s ranks would get MASTER_ADDR '" +
                       s.maddrs[k] + "' in attempt " + std::to_string(k + 2) + ", not '" +
                       maddr_of(rs.front()) + "'");
    }
    for (size_t k = 0; k < s.nodes.size(); ++k) {
      const std::vector<std::vector<int>> rs = alts(std::min(k + 1, rosters.size() - 1));
      bool ok = false;
      int want = -1;
      for (const std::vector<int>& r : rs) {
        const auto it = std::find(r.begin(), r.end(), s.id());
        want = it == r.end() ? -1 : static_cast<int>(it - r.begin());
        ok = ok || s.nodes[k] == want;
      }
      if (!ok)
        return Violate("shim " + std::to_string(s.id()) + " took NODE_RANK " +
                       std::to_string(s.nodes[k]) + " in attempt " + std::to_string(k + 2) +
                       "; its order gave it " + std::to_string(want));
    }
  }
  // The job's record: each attempt's NODE_RANKs' hosts as its order gave
  // them, and each retired shim under its host and the NODE_RANK it held.
  const Shim& root = *shims_[static_cast<size_t>(job_root_)];
  if (!root.has_final) return;
  auto attempts = ParseJson(root.final_order.attempts_json.empty() ? "[]"
                                                                    : root.final_order.attempts_json);
  if (attempts.ok())
    for (const JsonValue& a : attempts->items) {
      const JsonValue* number = a.Find("attempt");
      const JsonValue* hosts = a.Find("nodes");
      const int k = number ? std::atoi(number->text.c_str()) - 1 : -1;
      if (k < 0 || k >= static_cast<int>(rosters.size())) continue;
      std::string want, got;
      for (int h : rosters[static_cast<size_t>(k)]) want += (want.empty() ? "" : ",") + HostOf(h);
      if (hosts)
        for (const JsonValue& v : hosts->items) got += (got.empty() ? "" : ",") + v.text;
      if (got != want)
        return Violate("failure.json's attempt " + std::to_string(k + 1) + " lists its nodes as [" +
                       got.substr(0, 200) + "], not [" + want.substr(0, 200) + "]");
    }
  auto retired = ParseJson(root.final_order.retired_json.empty() ? "[]"
                                                                  : root.final_order.retired_json);
  if (retired.ok())
    for (const JsonValue& r : retired->items) {
      const JsonValue* shim = r.Find("shim");
      const JsonValue* host = r.Find("host");
      const JsonValue* node = r.Find("node");
      const JsonValue* attempt = r.Find("attempt");
      if (!shim) continue;
      const int id = std::atoi(shim->text.c_str());
      if (!host || host->text != HostOf(id))
        return Violate("failure.json retires shim " + std::to_string(id) + " under host '" +
                       (host ? host->text : "") + "', not '" + HostOf(id) + "'");
      const int k = attempt ? std::atoi(attempt->text.c_str()) - 1 : -1;
      if (node && node->kind == JsonValue::Kind::kNumber && k >= 0 &&
          k < static_cast<int>(rosters.size())) {
        const int at = std::atoi(node->text.c_str());
        const std::vector<int>& held = rosters[static_cast<size_t>(k)];
        if (at < 0 || at >= static_cast<int>(held.size()) || held[static_cast<size_t>(at)] != id)
          return Violate("failure.json retires shim " + std::to_string(id) + " from NODE_RANK " +
                         std::to_string(at) + " in attempt " + std::to_string(k + 1) +
                         ", which another held");
      }
    }
}

// --spares: from the failure (or loss) that led to the first restart that
// gives a NODE_RANK to a spare, to the last of that restart's holders
// taking its order (the ranks of the next attempt start at once): the
// tree's latency, the deciding window, and the back-off. -1: no spare took
// a place.
double Cluster::ReplaceSeconds() const {
  const int nodes = o_.shims - plan_.spares;
  double previous = -1;
  size_t k = 0;
  for (const auto& [at, frame] : record_.verdicts) {
    auto m = Msg::Decode(frame);
    if (!m.ok() || m->type() != "restart") continue;
    const double sent = at + root_go_;
    const std::vector<int> holders = Roster::Decode(m->Str("nodes"));
    const bool moved = std::any_of(holders.begin(), holders.end(), [&](int h) { return h >= nodes; });
    if (moved) {
      double cause = 1e18;
      for (double t : causes_)
        if (t > previous && t <= sent) cause = std::min(cause, t);
      if (cause > 1e17) return -1;
      double last = -1;
      for (int h : holders) {
        const Shim& s = *shims_[static_cast<size_t>(h)];
        if (k < s.restart_orders_at.size()) last = std::max(last, s.restart_orders_at[k]);
      }
      return last < 0 ? -1 : last - cause;
    }
    previous = sent;
    ++k;
  }
  return -1;
}

// The command that replays this run: its plan as drawn (so that it
// replays the same whatever later changes to the random draws), and the
// seed for the rest (the join's order).
std::string Cluster::Replay() const {
  return "aml-plane-sim --shims " + std::to_string(o_.shims) + " --seed " +
         std::to_string(o_.seed) + " --faults '" + plan_.Describe() + "'" +
         (o_.fanout != 32 ? " --fanout " + std::to_string(o_.fanout) : "") +
         (o_.per_node != 1 ? " --per-node " + std::to_string(o_.per_node) : "") +
         (o_.grace_s != 2 ? " --grace " + FormatNumber(o_.grace_s, "%g") : "") +
         (o_.hang_timeout_s > 0 ? " --hang-timeout " + FormatNumber(o_.hang_timeout_s, "%g") : "");
}

}  // namespace

Result<SimResult> RunSim(const SimOptions& o) {
  if (o.shims < 1) return Error{"--shims " + std::to_string(o.shims) + ": at least 1"};
  std::mt19937_64 rng(o.seed);
  auto plan = MakeFaultPlan(o.faults, o.shims, &rng);
  if (!plan.ok()) return plan.error();
  Cluster c(o, std::move(*plan));
  return c.Run();
}

}  // namespace aml
