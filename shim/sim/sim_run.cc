// The simulated run (sim_world.h): the event loop over the virtual clock,
// and the command line that replays it.
#include "shim/sim/sim_world.h"

namespace aml {
namespace simw {

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
    if (e.kind == Ev::kFaultEnd) {
      OnFaultEnd(plan_.faults[static_cast<size_t>(e.from)], now_);
      continue;
    }
    Shim& s = *shims_[static_cast<size_t>(e.shim)];
    if ((e.kind == Ev::kFrame || e.kind == Ev::kClosed) && Inboxed())
      s.inbox.erase(s.inbox.find(e.t));
    if (s.frozen && s.thaws && !s.killed &&
        (e.kind == Ev::kFrame || e.kind == Ev::kClosed || e.kind == Ev::kProc)) {
      s.backlog.push_back(e);  // read when it thaws
      continue;
    }
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
      case Ev::kFaultEnd:
        break;
    }
    if (!faults_pushed && shims_[0]->started) {
      // Faults count from rank 0's go (which may be at 0: one shim alone).
      faults_pushed = true;
      for (size_t i = 0; i < plan_.faults.size(); ++i) {
        const Fault& f = plan_.faults[i];
        Push({root_go_ + f.at_s, 0, Ev::kFault, -1, static_cast<int>(i), nullptr});
        if (f.for_s >= 0)
          Push({root_go_ + f.at_s + f.for_s, 0, Ev::kFaultEnd, -1, static_cast<int>(i), nullptr});
      }
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

}  // namespace simw

Result<SimResult> RunSim(const SimOptions& o) {
  if (o.shims < 1) return Error{"--shims " + std::to_string(o.shims) + ": at least 1"};
  std::mt19937_64 rng(o.seed);
  auto plan = MakeFaultPlan(o.faults, o.shims, &rng);
  if (!plan.ok()) return plan.error();
  simw::Cluster c(o, std::move(*plan));
  return c.Run();
}

}  // namespace aml
