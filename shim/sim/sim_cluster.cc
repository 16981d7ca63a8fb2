// The simulated links and events (sim_world.h): frames and closes between
// shims, a child moved below the heir, the ranks' ends, the faults.
#include "shim/sim/sim_world.h"

namespace aml {
namespace simw {

// The orders the job's machine gives this node's, as they are taken.
std::optional<LinkOrder> Shim::TakeOrder() {
  std::optional<LinkOrder> o = machine().TakeOrder();
  if (!o) return o;
  if (std::holds_alternative<CollectStacksOrder>(*o)) {
    if (collect_order_at < 0) collect_order_at = now_;
  } else if (std::holds_alternative<EndAttemptOrder>(*o)) {
    if (end_order_at < 0) end_order_at = now_;
  } else if (const auto* r = std::get_if<RestartOrder>(&*o)) {
    ++restart_orders;
    restart_order_at = now_;
    restart_orders_at.push_back(now_);
    if (r->roster) {
      nodes.push_back(r->node_rank);
      maddrs.push_back(r->master_addr);
      restart_ns.push_back(r->restart);
    }
  } else if (std::holds_alternative<PaceLookOrder>(*o)) {
    ++pace_orders;
  } else if (const auto* s = std::get_if<StopOrder>(&*o)) {
    procs.stopped = true;
    if (stop_order_at < 0) {
      stop_order_at = now_;
      has_final = true;
      final_order = *s;
    }
  }
  return o;
}

void ScheduleProc(Cluster* w, int shim, double at, size_t child, int proc, uint64_t epoch,
                  int status) {
  w->Schedule(shim, at, child, proc, epoch, status);
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

double Shim::RootHeardAgo(int shim, const std::string& addr, double now) {
  return w_->RootHeardAgo(id_, shim, addr, now);
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

// The heir's ask to the root's successor (plane_join.cc): answered by the
// successor's overlay as it stands, where it listens and can answer (a
// frozen one's hello goes unanswered; here it fails at once, as Relink).
double Cluster::RootHeardAgo(int from, int shim, const std::string& addr, double now) {
  const Shim& s = *shims_[static_cast<size_t>(shim)];
  if (addr != ListenAddress(NodeAddr(shim), PortOf(shim)) || s.killed || s.exited || s.frozen ||
      !s.started || Cut(from, shim))
    return -1;
  return s.tree.RootHeardAgo(now);
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
  if (!Carries(from, to)) {
    if (plan_.Ends()) Hold(from, to, std::make_shared<const std::string>(frame));
    return;
  }
  const double arrive = Arrival(from, to, frame.size() + 4, now_);
  Push({arrive, 0, Ev::kFrame, to, from, std::make_shared<const std::string>(frame)});
}

// A frame (or a close: null) sent across a cut that may heal: held, in
// order, until it does (TCP retransmits what the other side did not ack).
void Cluster::Hold(int from, int to, std::shared_ptr<const std::string> frame) {
  held_[{from, to}].push_back(std::move(frame));
}

// After a heal: each direction that carries again gets what was held. A
// peer that closed its side meanwhile answers with a reset (the sender
// reads its link closed); else the frames and the close arrive in order.
void Cluster::SendHeld(double now) {
  for (auto it = held_.begin(); it != held_.end();) {
    const auto [from, to] = it->first;
    if (!Carries(from, to)) {
      ++it;
      continue;
    }
    Shim& sender = *shims_[static_cast<size_t>(from)];
    Shim& peer = *shims_[static_cast<size_t>(to)];
    if (peer.closed.count(from) || peer.killed || peer.exited) {
      if (!sender.closed.count(to) && !sender.killed && !sender.exited)
        Push({now + lat_s_, 0, Ev::kClosed, from, to, nullptr});
    } else {
      for (auto& frame : it->second) {
        if (frame) {
          Push({Arrival(from, to, frame->size() + 4, now), 0, Ev::kFrame, to, from, frame});
        } else {
          Push({Arrival(from, to, 0, now), 0, Ev::kClosed, to, from, nullptr});
          break;
        }
      }
    }
    it = held_.erase(it);
  }
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
  if (Carries(s.id(), peer))
    Push({Arrival(s.id(), peer, 0, now) + late, 0, Ev::kClosed, peer, s.id(), nullptr});
  else if (plan_.Ends())
    Hold(s.id(), peer, nullptr);
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
  s.procs.Go(now);
  s.node.Start(now);
}

// ---- Ranks (sim_node.h): a process's end, as the supervisor reaps it

void Cluster::OnProc(Shim& s, const Event& e, double now) {
  int status = 0;
  std::string gone;
  if (e.proc == SimProcs::kStandbyProc) {
    // --warm-restart: a standby lost before its restart.
    if (s.procs.FireStandby(e.child, e.epoch, e.status, &gone)) s.node.OnStandbyGone(e.child, gone);
    return;
  }
  if (!s.procs.Fire(e.child, e.proc == SimProcs::kLeftProc, e.epoch, e.status, &status)) return;
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
  if (s.procs.retired && s.procs.StandbysLeft())
    Violate("shim " + std::to_string(s.id()) + " was retired and keeps its standbys "
            "(--warm-restart: no rank of it starts again)");
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
  WriteRecord(s);
  if (s.procs.StandbysLeft())
    Violate("shim " + std::to_string(s.id()) + " exited with a standby alive (--warm-restart: "
            "a process of it outlived it)");
  // Nobody exits while a shim below still runs its part, unless lost, or
  // unless it lost the job (an old root that woke or whose link healed):
  // it stepped down and told its children to yield (they link to its
  // heir), or ended its part without a majority, and a child that lost it
  // (the heir electing, a child below the heir) is in the other part.
  const double stopped = s.stop_order_at >= 0 ? s.stop_order_at : s.signalled_at;
  const bool lost_job = s.has_final && s.final_order.no_record;
  const bool stepped_down = lost_job && !s.machine().root();
  for (int c : stepped_down ? std::vector<int>{} : s.tree.children()) {
    const Shim& kid = *shims_[static_cast<size_t>(c)];
    if (!s.tree.Keeps(c) || kid.exited || dead_.count(c)) continue;
    // (With faults that end, a child that lost this shim is in another
    // part whatever this one's end: a cut healed after it left.)
    if ((lost_job || plan_.Ends()) && (kid.parent() != s.id() || kid.tree.parent_lost())) continue;
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
    const size_t index = static_cast<size_t>(&f - plan_.faults.data());
    std::vector<char>& in = parts_[index];
    in.assign(shims_.size(), 0);
    for (int g : f.group) {
      in[static_cast<size_t>(g)] = 1;
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
      s.thaws = f.for_s >= 0;
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
      cut_links_[static_cast<size_t>(&f - plan_.faults.data())] =
          {std::min(s.id(), s.parent()), std::max(s.id(), s.parent())};
      faulted_.insert(s.id());
      if (loss_at_ < 0) loss_at_ = now;
      causes_.push_back(now);
      break;
    case FaultKind::kOneWay:
      // Its frames to its parent are lost; the parent's reach it.
      if (s.parent() < 0) return;
      oneway_.insert({s.id(), s.parent()});
      cut_links_[static_cast<size_t>(&f - plan_.faults.data())] = {s.id(), s.parent()};
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

// A fault that ends (fault_plan.h "~D"): the frozen shim wakes into its
// backlog (read before its timers run, as the real loop's first poll after
// SIGCONT reads every link first), the cut or partition carries again.
void Cluster::OnFaultEnd(const Fault& f, double now) {
  const size_t index = static_cast<size_t>(&f - plan_.faults.data());
  switch (f.kind) {
    case FaultKind::kFreeze: {
      Shim& s = *shims_[static_cast<size_t>(f.shim == Fault::kRoot ? job_root_ : f.shim)];
      if (!s.frozen || !s.thaws || s.killed || s.exited) return;
      s.frozen = s.thaws = false;
      dead_.erase(s.id());
      std::vector<Event> backlog;
      backlog.swap(s.backlog);
      for (Event e : backlog) {
        e.t = now;
        Push(std::move(e));
      }
      s.busy_until = std::max(s.busy_until, now);
      s.paused_until = now;
      s.timer_at = now;
      Push({now, 0, Ev::kTimer, s.id(), static_cast<int>(++s.timer_gen), nullptr});
      return;
    }
    case FaultKind::kPartition:
      parts_.erase(index);
      break;
    case FaultKind::kCut:
      if (auto it = cut_links_.find(index); it != cut_links_.end()) cut_.erase(it->second);
      break;
    case FaultKind::kOneWay:
      if (auto it = cut_links_.find(index); it != cut_links_.end()) oneway_.erase(it->second);
      break;
    default:
      return;
  }
  SendHeld(now);
}

// A heir left "electing": it took the job, or its part ended. Never two
// roots: a heir takes the job only once the old root, alive on the other
// side of a cut, has ended its part.
void Cluster::TookOver(const Shim& s) {
  const JobState st = s.machine().state();
  if (st == JobState::kStopped || st == JobState::kSignalled) return;
  // (An old root that comes back is not the job's root again, whatever it
  // says: a newer term's root acted.)
  if (plan_.Ends() && !acted_.empty() && s.machine().term() < acted_.rbegin()->first) return;
  for (const auto& op : shims_) {
    const Shim& o = *op;
    if (o.id() == s.id() || !o.machine().root() || o.exited || dead_.count(o.id())) continue;
    const JobState os = o.machine().state();
    // (A heir still electing holds nothing: only one side can gather more
    // than half of the shims.)
    if (os == JobState::kStopped || os == JobState::kSignalled || os == JobState::kElecting)
      continue;
    // With faults that end, an old root frozen and then cut off may not
    // have found its cut yet when its heir takes the job: two roots of two
    // terms, the old one alone in its part (it cannot reach a majority).
    // What must hold is that one root acts in each term and that no old
    // root restarts the job once a newer term began (CheckFaultsThatEnd);
    // the job's root is the newer term's.
    if (plan_.Ends() && o.machine().term() != s.machine().term()) {
      if (s.machine().term() < o.machine().term()) return;
      continue;
    }
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

// What the shim's supervisor writes into the shared log dir as it exits
// (launch/supervisor_report.cc, over the simulator's StopOrder): its stop's
// record through the real fence, or, when it held the job and it ended
// well, the job's outcome; a shim that lost the job writes its own file.
void Cluster::WriteRecord(const Shim& s) {
  const RecordStamp stamp = s.machine().Stamp();
  // No record of the job without a majority: a holder's record is written
  // by a root that has not lost more than half of the job's shims, and
  // whose term is the newest that acted.
  if (stamp.holder && stamp.term > 0 && plan_.Ends() &&
      ((s.has_final && !s.final_order.no_record) || s.exit_code == 0)) {
    // (Shims lost after the job ended well take nothing from its end.)
    if (s.machine().LostMajority() && s.exit_code != 0)
      Violate("shim " + std::to_string(s.id()) + " wrote the job's record (term " +
              std::to_string(stamp.term) + ") having lost more than half of the job's shims");
    if (!acted_.empty() && stamp.term < acted_.rbegin()->first)
      Violate("shim " + std::to_string(s.id()) + " wrote the job's record in term " +
              std::to_string(stamp.term) + " after term " +
              std::to_string(acted_.rbegin()->first) + " began");
  }
  auto write = [&](const std::string& json) {
    const std::string record = Stamped(json, stamp);
    if (MayWrite(shared_record_, true, stamp)) shared_record_ = record;
  };
  if (s.has_final && !s.final_order.no_record) {
    const StopOrder& o = s.final_order;
    std::string json = o.failure_json;
    if (json.empty() && (!o.attempts_json.empty() || !o.retired_json.empty()))
      json = StopJson("sim", o.exit_code, o.message);
    if (!json.empty() && json.find("\"exit_code\"") == std::string::npos)
      json = WithMember(json, "exit_code", std::to_string(s.exit_code));
    if (!json.empty()) write(json);
  }
  if (s.exit_code == 0 && WritesEndedWell(stamp))
    write(EndedWellJson("sim"));
}

// The root's verdicts, each once (as it sends it down to every child).
void Cluster::NoteVerdict(int from, const std::string& frame) {
  // Every root's verdicts, by term: one root acts in a term, and none of
  // an older term restarts the job after a newer one began (faults that
  // end: CheckFaultsThatEnd). A part's end ("stop" of a lost kind) is no
  // verdict on the job.
  if (const Shim& s = *shims_[static_cast<size_t>(from)];
      s.machine().root() && s.machine().state() != JobState::kElecting &&
      frame.find("\"beat\"") == std::string::npos) {
    auto m = Msg::Decode(frame);
    const std::string t = m.ok() ? m->type() : "";
    const bool part = t == "stop" && m->Str("kind") == "lost";
    if (!part && (t == "stop" || t == "restart" || t == "halt" || t == "collect" || t == "end" ||
                  t == "finish")) {
      const int term = s.machine().term();
      acted_[term].insert(from);
      if (!term_began_.count(term)) term_began_[term] = now_;
      acts_.push_back({now_, term, from, t});
    }
  }
  // The job's root's alone: not a heir's while it is electing (until it
  // took the job, its word is its part's), nor a relay's. A heir's first
  // word once it took the job makes it the job's root.
  if (from != job_root_) {
    const Shim& s = *shims_[static_cast<size_t>(from)];
    if (!s.machine().root() || s.machine().state() == JobState::kElecting) return;
    if (std::getenv("AML_SIM_DEBUG")) std::fprintf(stderr, "verdict by %d at %.3f: %s\n", from, now_, frame.substr(0, 200).c_str());
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

}  // namespace simw
}  // namespace aml
