// The simulated join (sim_world.h): the tree's plan, each joiner's round
// trips and its cost at the doors, the doors' real decisions.
#include "shim/sim/sim_world.h"

namespace aml {
namespace simw {

// ---- The join (modelled: its round trips and its cost at each door)

// What a shim's ranks do, from the plan (fault_plan.h).
RankPlan Cluster::RanksOf(int shim) const {
  RankPlan r;
  r.prints = !plan_.quiet;
  r.warm = plan_.warm;
  r.run_s = plan_.run_s;
  for (const Fault& f : plan_.faults) {
    if (f.shim != shim) continue;
    if (f.kind == FaultKind::kFail) {
      r.first_fail = r.first_fail < 0 ? f.at_s : std::min(r.first_fail, f.at_s);
      r.refail = !plan_.restarts_succeed;
    }
    if (f.kind == FaultKind::kStubbornRanks) r.stubborn = true;
    if (f.kind == FaultKind::kStraggler) r.straggler = true;
    if (f.kind == FaultKind::kStandbyLost && r.standby_lost_s < 0) r.standby_lost_s = f.at_s;
    if (f.kind == FaultKind::kStandbyRefuse && r.standby_refuse_s < 0) r.standby_refuse_s = f.at_s;
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

}  // namespace simw
}  // namespace aml
