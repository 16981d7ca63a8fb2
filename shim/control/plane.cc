#include "shim/control/plane.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

#include "launch/wait_status.h"
#include "shim/base/clock.h"
#include "shim/base/log.h"
#include "shim/base/sha256.h"
#include "shim/base/text_list.h"
#include "shim/base/units.h"

namespace aml {
namespace {



}  // namespace

ControlPlane::ControlPlane(const PlaneConfig& c) : c_(c), machine_(c, this) {
  if (c_.hang_timeout_s) beat_s_ = std::clamp(*c_.hang_timeout_s / 10, 0.25, 1.0);
  my_output_ = MonotonicSeconds();
}

// -v: what this shim's links carried while the job ran (the simulator's
// "frames" count the same, bench/ and tests/e2e/test_sim_matches.py).
ControlPlane::~ControlPlane() {
  if (!go_ || c_.size == 1) return;
  std::string list;
  for (const auto& [type, n] : frames_)
    list += (list.empty() ? "" : " ") + EscapeControl(type) + "=" + std::to_string(n);
  LogVerbose("control plane: frames handled here: " + list);
}

double ControlPlane::Now() const { return MonotonicSeconds(); }
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
  if (parent_) add(*parent_);
}

void ControlPlane::OnPoll(const pollfd* fds, size_t n, double now) {
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
    ReadParent(now);
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
    auto m = Msg::Decode(f);
    if (p.rank < 0) {
      // The first frame must be a hello with this job's proof, from a rank
      // not connected already (a second "rank 3" is refused; the real one,
      // retrying after its first connection broke, asks again once that
      // one's end is read).
      const bool ok = m.ok() && m->type() == "hello" && m->Str("v") == kVersion &&
                      ProvesUp(p, "tree", *m, nullptr) && m->Int("size") == c_.size &&
                      m->Int("rank") > 0 && m->Int("rank") < c_.size &&
                      !Connected(static_cast<int>(m->Int("rank")));
      if (!ok) {
        ++refused_;
        p.rank = -2;
        return;
      }
      p.rank = static_cast<int>(m->Int("rank"));
      p.host = m->Str("host");
      p.live.Start(now);
      p.output_time = now;
      p.link->set_max_frame(kMaxFrame);
      p.link->Send(Msg("welcome")
                       .Set("proof", Proof("tree", ProofDirection::kDown, p.challenge,
                                           m->Str("nonce"), p.rank))
                       .Encode());
      if (go_) p.link->Send(Msg("go").Encode());
      continue;
    }
    if (!m.ok()) {
      PeerGone(p, "sent a garbled message (" + m.error().message + ")", now);
      return;
    }
    p.live.Heard(now);
    ++frames_[m->type()];
    OnChildMsg(p, f, *m, now);
    if (p.done) return;
  }
  if (p.link->broken() && p.rank >= 0 && !p.done) PeerGone(p, p.link->why(), now);
}

// Beats and the join's words are the overlay's; the rest is the job's.
void ControlPlane::OnChildMsg(Peer& p, const std::string& frame, const Msg& m, double now) {
  const std::string& t = m.type();
  if (t == "beat") {
    const double age = m.Number("age", 0);
    if (age >= 0) p.output_time = std::max(p.output_time, now - age);
    return;
  }
  if (t == "up") {
    if (c_.rank == 0) up_.insert(static_cast<int>(m.Int("rank")));
    else SendUp(frame);
    return;
  }
  if (LeavesInOrder(m)) {
    // Done, or stopped by its launcher: it closes, and is not lost.
    p.done = true;
    p.rank = -2;
  }
  machine_.OnFromChild(frame, m, now);
}

void ControlPlane::ReadParent(double now) {
  std::vector<std::string> frames;
  parent_->link->Read(&frames);
  for (const std::string& f : frames) {
    auto m = Msg::Decode(f);
    if (!m.ok()) {
      ParentGone("it sent a garbled message", now);
      return;
    }
    parent_->live.Heard(now);
    ++frames_[m->type()];
    OnParentMsg(f, *m, now);
  }
  if (parent_ && parent_->link->broken()) ParentGone(parent_->link->why(), now);
}

void ControlPlane::OnParentMsg(const std::string& frame, const Msg& m, double now) {
  const std::string& t = m.type();
  if (t == "beat") return;
  if (t == "go") {
    go_ = true;
    SayTreeCrowd();
    SendDown(frame);
    return;
  }
  if (t == "abort") {
    abort_ = m.Str("why");
    SendDown(frame);
    return;
  }
  if (LeavesInOrder(m)) parent_lost_ = true;  // it goes; not a loss to report
  machine_.OnFromParent(frame, m, now);
}

// ---- Sending

void ControlPlane::SendUp(const std::string& frame) {
  if (parent_ && !parent_lost_) parent_->link->Send(frame);
}

void ControlPlane::SendDown(const std::string& frame) {
  for (auto& ch : children_)
    if (ch->rank >= 0 && !ch->done) ch->link->Send(frame);
}

// ---- Loss

void ControlPlane::PeerGone(Peer& p, const std::string& why, double now) {
  const int rank = p.rank;
  p.done = true;
  p.rank = -2;
  if (!go_) return;
  machine_.OnShimLost("the control plane lost " + ShimName(rank, p.host) + " (" + EscapeControl(why) +
                          ")",
                      now);
}

void ControlPlane::ParentGone(const std::string& why, double now) {
  if (parent_lost_) return;
  parent_lost_ = true;
  if (!go_) {
    abort_ = "control plane: lost its parent, " + ShimName(parent_rank_, "") + " (" + why + ")";
    return;
  }
  machine_.OnParentLost("aml-shim: lost the control plane: the link to its parent, " +
                            ShimName(parent_rank_, "") + " at " + parent_->addr + ", " +
                            EscapeControl(why) + "; ending this node's ranks\n",
                        now);
}

// ---- Time

// Children that closed or left. What they last printed still counts for the
// watchdog, and a part of the job that ended well is activity too.
void ControlPlane::ForgetGoneChildren(double now) {
  for (auto it = children_.begin(); it != children_.end();) {
    Peer& p = **it;
    if (p.rank != -2 && !p.link->broken()) {
      ++it;
      continue;
    }
    if (p.output_time > 0) departed_output_ = std::max(departed_output_, p.output_time);
    if (p.done && go_) departed_output_ = std::max(departed_output_, now);
    it = children_.erase(it);
  }
}

double ControlPlane::SubtreeOutput() const {
  double t = std::max(my_output_, departed_output_);
  for (const auto& ch : children_)
    if (ch->rank >= 0) t = std::max(t, ch->output_time);
  return t;
}

void ControlPlane::ResetOutput(double now) {
  my_output_ = departed_output_ = now;
  for (auto& ch : children_) ch->output_time = now;
}

bool ControlPlane::ChildrenAllDone() const {
  for (const auto& ch : children_)
    if (ch->rank >= 0 && !ch->done) return false;
  return true;
}

bool ControlPlane::ChildrenLinked() const {
  for (const auto& ch : children_)
    if (ch->rank >= 0 && !ch->link->broken()) return true;
  return false;
}

bool ControlPlane::Flushed() const {
  if (parent_ && !parent_lost_ && parent_->link->wants_write()) return false;
  for (const auto& ch : children_)
    if (ch->rank >= 0 && ch->link->wants_write()) return false;
  return true;
}

bool ControlPlane::ParentClosed() const { return parent_ && parent_->link->broken(); }

double ControlPlane::WallNow() const { return WallSeconds(); }

// The next attempt's MASTER_PORT: one the kernel has free now (the last
// attempt's store may still hold its port, or its connections linger in
// TIME_WAIT); rank 0's ranks run where this shim runs.
int ControlPlane::FreePort() const {
  auto l = ListenAny(0);
  return l.ok() ? l->port : c_.master_port;
}

void ControlPlane::Beat(double now) {
  next_beat_ = now + beat_s_;
  if (parent_ && !parent_lost_)
    parent_->link->Send(Msg("beat").SetNumber("age", now - SubtreeOutput()).Encode());
  SendDown(Msg("beat").Encode());
}

double ControlPlane::NextDeadline(double now) const {
  double next = std::min(now + 3600, next_beat_);
  const double startup_until = go_at_ + c_.startup_s;
  for (const auto& p : door_pending_) next = std::min(next, p->hello_until);
  // (Every deadline below is cleared or moved by OnTimer once it passes, or
  // counts only while ahead: the loop never spins.)
  for (const auto& p : children_) {
    if (p->rank == -1) next = std::min(next, p->hello_until);
    else if (p->rank >= 0 && go_) next = std::min(next, p->live.LostAt(now, startup_until));
  }
  if (parent_ && !parent_lost_ && go_)
    next = std::min(next, parent_->live.LostAt(now, startup_until));
  // The allowances shrink when start-up is over: look again then.
  if (go_ && startup_until > now) next = std::min(next, startup_until);
  if (go_) next = std::min(next, machine_.NextDeadline(now));
  return std::max(next, now);
}

void ControlPlane::OnTimer(double now) {
  const double startup_until = go_at_ + c_.startup_s;
  // Joins answered (kept until the shim closes, so that TIME_WAIT lands on
  // its side, not on MASTER_PORT) or silent past their 5 s.
  for (auto& p : door_pending_)
    if (p->rank == -1 && now >= p->hello_until) ++refused_;
  door_pending_.erase(std::remove_if(door_pending_.begin(), door_pending_.end(),
                                     [&](const std::unique_ptr<Peer>& p) {
                                       return now >= p->hello_until;
                                     }),
                      door_pending_.end());
  for (auto& p : children_) {
    if (p->rank == -1 && now >= p->hello_until) {
      p->rank = -2;
      ++refused_;
    } else if (p->rank >= 0 && go_ && now >= p->live.LostAt(now, startup_until)) {
      PeerGone(*p, "silent for " + FormatNumber(now - p->live.last_heard, "%.1f") + " s", now);
    }
  }
  if (parent_ && !parent_lost_ && go_ && now >= parent_->live.LostAt(now, startup_until))
    ParentGone("silent for " + FormatNumber(now - parent_->live.last_heard, "%.1f") + " s", now);
  if (now >= next_beat_) Beat(now);
  ForgetGoneChildren(now);
  if (go_) machine_.OnTimer(now);
}

// ---- What this node sees: the job's state machine decides

void ControlPlane::OnOutput(double now) { my_output_ = now; }

void ControlPlane::OnChildFailed(const LocalFailure& f) { machine_.OnChildFailed(f, Now()); }

void ControlPlane::OnStacks(const std::vector<RankStack>& stacks) {
  machine_.OnStacks(stacks, Now());
}

void ControlPlane::OnChildrenDone(const NodeOutcome& o) { machine_.OnChildrenDone(o, Now()); }

void ControlPlane::OnShimSignalled(int sig, const std::string& why) {
  machine_.OnShimSignalled(sig, why, Now());
}

bool ControlPlane::MayExit() const { return machine_.MayExit(MonotonicSeconds()); }

bool ControlPlane::PrintsOwnFailure() const { return machine_.PrintsOwnFailure(); }

std::optional<LinkOrder> ControlPlane::TakeOrder() { return machine_.TakeOrder(); }

}  // namespace aml
