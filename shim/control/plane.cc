#include "shim/control/plane.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>

#include "launch/store_host.h"
#include "shim/base/clock.h"
#include "shim/base/log.h"
#include "shim/net/tcp.h"

namespace aml {

ControlPlane::ControlPlane(const PlaneConfig& c)
    : c_(c), tree_(c, this, TimingOf(c.hang_timeout_s, c.flight_recorder).beat_s, c.startup_s) {
  tree_.OnOutput(MonotonicSeconds());
}

// -v: what this shim's links carried while the job ran (the simulator's
// "frames" count the same, tests/e2e/test_sim_matches.py).
ControlPlane::~ControlPlane() {
  if (!tree_.go() || c_.size == 1) return;
  std::string list;
  for (const auto& [type, n] : tree_.frames())
    list += (list.empty() ? "" : " ") + EscapeControl(type) + "=" + std::to_string(n);
  LogVerbose("control plane: frames handled here: " + list);
}

double ControlPlane::Now() const { return MonotonicSeconds(); }

// ---- LinkIo: the tree's links are these TCP connections

ControlPlane::Peer* ControlPlane::Linked(int peer) const {
  if (parent_ && peer == parent_rank_) return parent_.get();
  for (const auto& ch : children_)
    if (ch->rank == peer) return ch.get();
  return nullptr;
}

void ControlPlane::Send(int peer, const std::string& frame) {
  if (Peer* p = Linked(peer)) p->link->Send(frame);
}

bool ControlPlane::Open(int peer) const {
  const Peer* p = Linked(peer);
  return p && !p->link->broken();
}

bool ControlPlane::Pending(int peer) const {
  const Peer* p = Linked(peer);
  return p && p->link->wants_write();
}

double ControlPlane::WallNow() const { return WallSeconds(); }

// The next attempt's MASTER_PORT: one the kernel has free now (the last
// attempt's store may still hold its port, or its connections linger in
// TIME_WAIT); rank 0's ranks run where this shim runs.
std::vector<int> ControlPlane::Below(int shim) const {
  return planner_ ? planner_->Below(shim) : std::vector<int>{};
}

std::vector<int> ControlPlane::Parents() const {
  return planner_ ? planner_->Parents(c_.size) : std::vector<int>{};
}

int ControlPlane::FreePort() const {
  auto l = ListenAny(0);
  return l.ok() ? l->port : c_.master_port;
}

bool ControlPlane::HostStore(int port) {
  if (!store_host_) return false;
  std::string why;
  if (store_host_->Host(port, &why)) {
    LogVerbose("--warm-restart: the store host opened the next attempt's store on port " +
               std::to_string(port) + ": every rank starts as its client");
    return true;
  }
  // Still importing: it may next time (said with -v). Gone: said once.
  if (store_host_->live()) {
    LogVerbose("--warm-restart: " + why + ": rank 0 hosts the next attempt's store");
  } else if (!said_store_) {
    said_store_ = true;
    LogWarning("--warm-restart: " + why + ": rank 0 hosts each attempt's store from now on");
  }
  return false;
}

// ---- Descriptors

void ControlPlane::AddPollFds(std::vector<pollfd>* fds) {
  if (door_.valid()) fds->push_back({door_.get(), POLLIN, 0});
  if (listener_.valid()) fds->push_back({listener_.get(), POLLIN, 0});
  auto add = [&](const Peer& p) {
    const short ev = static_cast<short>(POLLIN | (p.link->wants_write() ? POLLOUT : 0));
    fds->push_back({p.link->fd(), ev, 0});
  };
  for (const auto& p : door_pending_) add(*p);
  for (const auto& p : children_) add(*p);
  // A parent the tree lost is written to, no more read: its last word
  // ("left") goes out, and then its link closes (DropLostParent).
  if (parent_ && tree_.parent_lost()) fds->push_back({parent_->link->fd(), POLLOUT, 0});
  else if (parent_) add(*parent_);
}

void ControlPlane::OnPoll(const pollfd* fds, size_t n, double now) {
  tree_.OnPolled(now);
  // Match by descriptor: the lists may change while we handle them.
  std::map<int, short> ready;
  for (size_t i = 0; i < n; ++i)
    if (fds[i].revents) ready[fds[i].fd] = fds[i].revents;
  if (ready.empty()) return;
  // Connections first, then newcomers: a hello that has arrived is read
  // before a newcomer could take its seat.
  for (size_t i = 0; i < door_pending_.size(); ++i)
    if (ready.count(door_pending_[i]->link->fd())) ReadDoor(*door_pending_[i], now);
  for (size_t i = 0; i < children_.size(); ++i) {
    Peer& p = *children_[i];
    if (!ready.count(p.link->fd())) continue;
    p.link->Flush();
    ReadChild(p, now);
  }
  if (parent_ && ready.count(parent_->link->fd())) {
    parent_->link->Flush();
    if (!tree_.parent_lost()) ReadParent(now);
  }
  if (door_.valid() && ready.count(door_.get()))
    AcceptPending(door_.get(), &door_pending_, &door_crowd_, now);
  if (listener_.valid() && ready.count(listener_.get()))
    AcceptPending(listener_.get(), &children_, &tree_crowd_, now);
  // Drop what is finished: answered joins, children gone.
  door_pending_.erase(std::remove_if(door_pending_.begin(), door_pending_.end(),
                                     [](const std::unique_ptr<Peer>& p) {
                                       return p->link->broken();
                                     }),
                      door_pending_.end());
  ForgetGoneChildren(now);
  DropLostParent();
}

// A parent the tree lost (silent, closed, or left for a new root) and that
// has its last words: its link closes. Kept, a link its peer closed later
// (an old root woken) stayed readable and unread: the new root spun on it,
// a core busy for the rest of the job.
void ControlPlane::DropLostParent() {
  if (parent_ && tree_.parent_lost() &&
      (parent_->link->broken() || !parent_->link->wants_write()))
    parent_.reset();
}

// ---- Children

bool ControlPlane::Connected(int rank) const {
  for (const auto& ch : children_)
    if (ch->rank == rank && !ch->link->broken()) return true;
  return false;
}

void ControlPlane::ReadChild(Peer& p, double now) {
  std::vector<std::string> frames;
  p.link->Read(&frames);
  if (p.rank == -1) SkipGreeting(&p, &frames);
  for (const std::string& f : frames) {
    if (p.rank < 0) {
      // The first frame must be a hello with this job's proof, from a rank
      // not connected already (a second "rank 3" is refused; the real one,
      // retrying after its first connection broke, asks again once that
      // one's end is read).
      const Visitor v = ReadHello(c_.prover, c_.size, p.challenge, f,
                                  [&](int rank) { return Connected(rank); });
      if (!v.ok) {
        ++refused_;
        p.rank = -2;
        return;
      }
      if (v.ask) {
        // The root's heir asks whether this shim still hears the root
        // (tree_links.h, kRootHeardS): answered, no link made; what the
        // root sent meanwhile is read first (children are read before the
        // parent: a shim descheduled for seconds would answer from before).
        if (parent_ && !tree_.parent_lost()) ReadParent(now);
        p.link->Send(DoorAnswer(c_.prover, "welcome", "tree", p.challenge, v)
                         .SetNumber("ra", tree_.RootHeardAgo(now))
                         .Encode());
        p.rank = -2;
        return;
      }
      p.rank = v.rank;
      p.host = v.host;
      p.link->set_max_frame(kMaxFrame);
      p.link->Send(DoorAnswer(c_.prover, "welcome", "tree", p.challenge, v).Encode());
      tree_.AddChild(p.rank, p.host, ListenAddress(PeerAddress(p.link->fd()), v.port), now);
      if (tree_.go()) p.link->Send(Msg("go").Encode());
      continue;
    }
    tree_.OnChildFrame(p.rank, f, now);
    if (!tree_.Keeps(p.rank)) {
      p.rank = -2;  // done, or lost: closed after this round
      return;
    }
  }
  if (p.link->broken() && p.rank >= 0) {
    tree_.OnChildClosed(p.rank, p.link->why(), now);
    p.rank = -2;
  }
}

void ControlPlane::ReadParent(double now) {
  std::vector<std::string> frames;
  const Peer* read = parent_.get();
  parent_->link->Read(&frames);
  for (const std::string& f : frames) {
    tree_.OnParentFrame(f, now);
    // Lost, or linked to the root's heir in its place (Relink).
    if (tree_.parent_lost() || parent_.get() != read) return;
  }
  if (parent_->link->broken()) tree_.OnParentClosed(parent_->link->why(), now);
}

// Children that closed or left, or that the tree no longer keeps.
void ControlPlane::ForgetGoneChildren(double now) {
  for (auto it = children_.begin(); it != children_.end();) {
    Peer& p = **it;
    // Its last words first (a write that found it closed comes before them).
    if (p.rank >= 0 && p.link->broken()) ReadChild(p, now);
    // Kept: linked, and still to say hello or still part of the job.
    const bool keep = !p.link->broken() && (p.rank == -1 || (p.rank >= 0 && tree_.Keeps(p.rank)));
    it = keep ? it + 1 : children_.erase(it);
  }
}

// ---- Time

double ControlPlane::NextDeadline(double now) const {
  double next = tree_.NextDeadline(now);
  for (const auto& p : door_pending_) next = std::min(next, p->hello_until);
  for (const auto& p : children_)
    if (p->rank == -1) next = std::min(next, p->hello_until);
  return std::max(next, now);
}

void ControlPlane::OnTimer(double now) {
  // Joins answered (kept until the shim closes, so that TIME_WAIT lands on
  // its side, not on MASTER_PORT) or silent past their 5 s.
  for (auto& p : door_pending_)
    if (p->rank == -1 && now >= p->hello_until) ++refused_;
  door_pending_.erase(std::remove_if(door_pending_.begin(), door_pending_.end(),
                                     [&](const std::unique_ptr<Peer>& p) {
                                       return now >= p->hello_until;
                                     }),
                      door_pending_.end());
  for (auto& p : children_)
    if (p->rank == -1 && now >= p->hello_until) {
      p->rank = -2;
      ++refused_;
    }
  tree_.OnTimer(now);
  ForgetGoneChildren(now);
  DropLostParent();
}

// ---- What this node sees: the job's state machine decides

void ControlPlane::OnOutput(double now) { tree_.OnOutput(now); }

// (This node's words wait while a woken root hears its links anew:
// TreeLinks::ToJob.)
void ControlPlane::OnChildFailed(const LocalFailure& f) {
  tree_.ToJob(Now(), [f](JobMachine& m, double at) { m.OnChildFailed(f, at); });
}

// --metrics-addr (docs/metrics.md): the job as this shim knows it; rank 0's
// shim (or a heir that took the job) also the job's own.
void ControlPlane::AppendMetrics(PromText* out, double now) const {
  const JobMachine& m = tree_.machine();
  out->Family("aml_shim_job_state", "gauge", "1 for the state of the job's machine on this shim");
  out->Sample("aml_shim_job_state", {{"state", JobStateName(m.state())}}, 1);
  const double heard = tree_.parent_heard_at();
  if (heard >= 0) {
    out->Family("aml_shim_heartbeat_age_seconds", "gauge",
                "seconds since this shim last heard its parent in the control plane's tree");
    out->Sample("aml_shim_heartbeat_age_seconds", std::max(0.0, now - heard));
  }
  if (c_.pace_every_s > 0) AppendPaceMetrics(out);
  if (!m.root()) return;
  out->Family("aml_shim_job_shims", "gauge", "the job's shims (the root's view)");
  out->Sample("aml_shim_job_shims", c_.size);
  out->Family("aml_shim_job_restarts_total", "counter", "restarts of the job so far");
  out->Sample("aml_shim_job_restarts_total", m.restarts());
  if (const Roster* r = m.roster()) {
    out->Family("aml_shim_job_retired_nodes", "gauge", "nodes retired (--spares)");
    out->Sample("aml_shim_job_retired_nodes", static_cast<double>(r->retirements().size()));
    out->Family("aml_shim_job_spares_left", "gauge", "spares not yet given a NODE_RANK (--spares)");
    out->Sample("aml_shim_job_spares_left", static_cast<double>(r->Spares().size()));
  }
}

// --straggler-check (docs/control-plane.md, "Slow nodes"): this shim's
// clock, and the check's own (straggler_check.h): its looks; on the root,
// every node late in the last look or named.
void ControlPlane::AppendPaceMetrics(PromText* out) const {
  const JobMachine& m = tree_.machine();
  const RootClock clock = tree_.root_clock();
  if (clock.known) {
    out->Family("aml_shim_clock_offset_seconds", "gauge",
                "the root shim's clock minus this one's, from the control plane's beats");
    out->Sample("aml_shim_clock_offset_seconds", clock.offset);
    out->Family("aml_shim_clock_offset_bound_seconds", "gauge",
                "the offset is right within this (half the best round trip, summed up the tree)");
    out->Sample("aml_shim_clock_offset_bound_seconds", clock.bound);
  }
  m.straggler().AppendMetrics(out, m.root(), [&m](int shim) { return m.HostName(shim); });
}

void ControlPlane::OnPace(int64_t look, const std::vector<RankTimes>& times) {
  tree_.OnOwnPace(look, times, Now());
}

void ControlPlane::OnRecords(const std::vector<RankRecord>& records) {
  tree_.ToJob(Now(), [records](JobMachine& m, double at) { m.OnRecords(records, at); });
}

void ControlPlane::OnStacks(const std::vector<RankStack>& stacks) {
  tree_.ToJob(Now(), [stacks](JobMachine& m, double at) { m.OnStacks(stacks, at); });
}

void ControlPlane::OnWarmStarts(int warm, int cold) {
  tree_.ToJob(Now(), [warm, cold](JobMachine& m, double at) { m.OnWarmStarts(warm, cold, at); });
}

void ControlPlane::OnChildrenDone(const NodeOutcome& o) {
  tree_.ToJob(Now(), [o](JobMachine& m, double at) { m.OnChildrenDone(o, at); });
}

void ControlPlane::OnShimSignalled(int sig, const std::string& why) {
  tree_.machine().OnShimSignalled(sig, why, Now());
}

bool ControlPlane::MayExit() const { return tree_.machine().MayExit(MonotonicSeconds()); }

bool ControlPlane::PrintsOwnFailure() const { return tree_.machine().PrintsOwnFailure(); }

std::optional<LinkOrder> ControlPlane::TakeOrder() { return tree_.machine().TakeOrder(); }

}  // namespace aml
