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

constexpr char kVersion[] = "aml-shim-control-2";
constexpr size_t kMaxHelloFrame = 4 << 10;   // a join or a hello
constexpr size_t kMaxFrame = 1 << 20;        // anything after it
constexpr size_t kMaxPending = 64;           // strangers waiting at a door
constexpr double kHelloS = 5;                // from accept to hello
constexpr auto kRetry = std::chrono::milliseconds(100);
constexpr char kRootNode[] = "rank 0's node";

Deadline DeadlineIn(double s) {
  return Clock::now() + std::chrono::milliseconds(static_cast<long>(std::max(0.0, s) * 1000));
}

std::string Who(int rank, const std::string& host) {
  return "rank " + std::to_string(rank) + "'s shim" +
         (host.empty() ? "" : " on " + EscapeControl(host));
}

int Accept(int listen_fd) {
  return accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

// Connects to ip:port, reads the listener's challenge, sends what `ask`
// makes of it, and returns the connection, the challenge and the frame that
// answers: connecting waits at most `connect_s`, each answer `answer_s`.
struct Answer {
  Fd fd;
  std::string challenge;
  std::string frame;
};
Result<Answer> Ask(const std::string& ip, int port, const std::string& kind,
                   const std::function<Msg(const std::string& challenge)>& ask, double connect_s,
                   double answer_s) {
  auto fd = ConnectTcp(ip, port, DeadlineIn(connect_s));
  if (!fd.ok()) return fd.error();
  // A greeting at once, before the challenge arrives: a door crowded with
  // strangers that say nothing never takes this seat first.
  Status greeted = SendFrame(fd->get(), Msg("hi").Encode(), DeadlineIn(5));
  if (!greeted.ok()) return greeted.error();
  auto hi = RecvFrame(fd->get(), kMaxHelloFrame, DeadlineIn(answer_s));
  if (!hi.ok()) return hi.error();
  auto challenge = Msg::Decode(*hi);
  if (!challenge.ok() || challenge->type() != "challenge" || challenge->Str("n").empty())
    return Error{"no challenge: not aml-shim's control plane (of this version)"};
  if (challenge->Str("kind") != kind)
    return Error{"it asks for a proof of kind '" + EscapeControl(challenge->Str("kind")) +
                 "', this shim has '" + kind + "' (is AML_SHIM_JOB_SECRET, or munged, the same "
                 "on every node?)"};
  Status sent = SendFrame(fd->get(), ask(challenge->Str("n")).Encode(), DeadlineIn(5));
  if (!sent.ok()) return sent.error();
  auto reply = RecvFrame(fd->get(), kMaxHelloFrame, DeadlineIn(answer_s));
  if (!reply.ok()) return reply.error();
  return Answer{std::move(*fd), challenge->Str("n"), std::move(*reply)};
}

}  // namespace

JobConfig ControlPlane::MachineConfig(const PlaneConfig& c) {
  JobConfig j;
  j.rank = c.rank;
  j.size = c.size;
  j.node = c.node;
  j.host = c.host;
  j.ranks = c.ranks;
  j.world_ranks = c.world_ranks;
  j.hang_timeout_s = c.hang_timeout_s;
  j.grace_s = c.grace_s;
  j.run_id = c.run_id;
  j.log_dir = c.log_dir;
  j.max_restarts = c.max_restarts;
  return j;
}

ControlPlane::ControlPlane(const PlaneConfig& c) : c_(c), machine_(MachineConfig(c), this) {
  if (c_.hang_timeout_s) beat_s_ = std::clamp(*c_.hang_timeout_s / 10, 0.25, 1.0);
  my_output_ = MonotonicSeconds();
}

ControlPlane::~ControlPlane() = default;

double ControlPlane::Now() const { return MonotonicSeconds(); }

std::string ControlPlane::Proof(const std::string& door, ProofDirection d,
                                const std::string& challenge, const std::string& nonce,
                                int rank) const {
  // A MUNGE credential that cannot be made (munged stopped) is an empty
  // proof, which proves nothing: the peer refuses, and says why.
  auto proof = c_.prover.Make("control-plane-" + door, d, challenge, nonce, std::to_string(rank));
  if (!proof.ok()) {
    LogVerbose("control plane: " + proof.error().message);
    return "";
  }
  return *proof;
}

// This shim's first frame at a door: a join (rank 0's MASTER_PORT) or a
// hello (its parent's port), answering that connection's challenge.
Msg ControlPlane::Introduce(const std::string& type, const std::string& challenge,
                            const std::string& nonce) const {
  Msg m(type);
  m.Set("v", std::string(kVersion)).Set("rank", c_.rank).Set("size", c_.size);
  m.Set("host", c_.host).Set("nonce", nonce);
  m.Set("proof", Proof(type == "join" ? "join" : "tree", ProofDirection::kUp, challenge, nonce,
                       c_.rank));
  return m;
}

// The first frame of a connection `p` accepted: its proof answers our
// challenge for the rank it names.
bool ControlPlane::ProvesUp(const Peer& p, const std::string& door, const Msg& m,
                            std::string* why) const {
  return c_.prover.Check(m.Str("proof"), "control-plane-" + door, ProofDirection::kUp,
                         p.challenge, m.Str("nonce"), std::to_string(m.Int("rank")), why);
}

// The door's answer to this shim proves itself for our connection.
bool ControlPlane::ProvesDown(const std::string& door, const Msg& m, const std::string& challenge,
                              const std::string& nonce) const {
  return c_.prover.Check(m.Str("proof"), "control-plane-" + door, ProofDirection::kDown,
                         challenge, nonce, std::to_string(c_.rank));
}

Result<std::unique_ptr<ControlPlane>> ControlPlane::Join(const PlaneConfig& config) {
  std::unique_ptr<ControlPlane> p(new ControlPlane(config));
  if (config.size > 1) {
    auto l = ListenAny(0);
    if (!l.ok()) return Error{"control plane: cannot listen: " + l.error().message};
    p->listener_ = std::move(l->fd);
    p->listen_port_ = l->port;
    Status st = config.rank == 0 ? p->JoinAsRoot() : p->JoinAsMember();
    if (!st.ok()) return st.error();
  }
  p->go_ = true;
  const double now = p->Now();
  p->my_output_ = now;
  p->next_beat_ = now + p->beat_s_;
  p->go_at_ = now;
  for (auto& child : p->children_) {
    child->live.Start(now);
    child->output_time = now;
  }
  if (p->parent_) p->parent_->live.Start(now);
  p->machine_.Start(now);
  return p;
}

// ---- Joining

Status ControlPlane::JoinAsRoot() {
  auto door = ListenAny(c_.master_port);
  if (!door.ok())
    return Error{"control plane: rank 0 cannot listen on MASTER_PORT " +
                 std::to_string(c_.master_port) + " for the other shims to join: " +
                 door.error().message};
  door_ = std::move(door->fd);
  // Shims on rank 0's host learn its address from their join connection.
  planner_ = std::make_unique<TreePlanner>(c_.fanout, kRootNode, "", listen_port_);
  const double deadline = Now() + c_.join_timeout_s;
  Status st = RunUntilGo(deadline);
  door_.reset();
  door_pending_.clear();
  const std::string flood = door_crowd_.Note("MASTER_PORT");
  if (st.ok()) {
    if (!flood.empty()) LogWarning("control plane: " + flood);
    SayTreeCrowd();
    SendDown(Msg("go").Encode());
    depth_ = planner_->depth();
    return st;
  }
  // Not everyone joined: the ones that did hear why, and nothing starts.
  std::vector<int> missing;
  for (int r = 1; r < c_.size; ++r)
    if (!up_.count(r)) missing.push_back(r);
  const std::string why = "control plane: " + RankList(missing) + " of " +
                          std::to_string(c_.size) + " shims did not join rank 0 at " +
                          c_.master_addr + ":" + std::to_string(c_.master_port) + " within " +
                          FormatRate(c_.join_timeout_s) + " s (--preflight-timeout)" +
                          (refused_ ? "; " + std::to_string(refused_) +
                                          " connection(s) without this job's proof were refused"
                                    : "") +
                          (flood.empty() ? "" : "; " + flood);
  SendDown(Msg("abort").Set("why", why).Encode());
  const double until = Now() + kFlushS;
  while (Now() < until) {
    bool pending = false;
    for (auto& ch : children_) {
      ch->link->Flush();
      pending = pending || ch->link->wants_write();
    }
    if (!pending) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Error{why};
}

Status ControlPlane::JoinAsMember() {
  const double deadline = Now() + c_.join_timeout_s;
  const std::string target = c_.master_addr + ":" + std::to_string(c_.master_port);
  std::string last = "no answer";
  std::optional<Msg> place;
  // 1. Ask rank 0 where to hang in the tree (retried: rank 0 may still be in
  // its preflight, or answering others).
  while (!place && Now() < deadline) {
    auto ips = ResolveHost("MASTER_ADDR", c_.master_addr);
    if (!ips.ok() || ips->empty()) {
      last = ips.ok() ? "no address" : ips.error().message;
    } else {
      const std::string nonce = NewNonce();
      auto join = [&](const std::string& challenge) {
        return Introduce("join", challenge, nonce).Set("port", listen_port_);
      };
      auto reply = Ask(ips->front(), c_.master_port, ProofKindName(c_.prover.kind()), join,
                       std::min(5.0, deadline - Now()),
                       std::min(10.0, std::max(0.1, deadline - Now())));
      if (!reply.ok()) {
        last = reply.error().message;
      } else if (auto m = Msg::Decode(reply->frame); !m.ok()) {
        last = "garbled answer: " + m.error().message;
      } else if (m->type() == "refused") {
        return Error{"control plane: rank 0 (" + target + ") refused this shim: " +
                     m->Str("why")};
      } else if (m->type() == "place" && !ProvesDown("join", *m, reply->challenge, nonce)) {
        last = "an answer without this job's proof (not this job's rank 0)";
      } else if (m->type() == "place") {
        place = std::move(*m);
        break;
      } else {
        last = "unexpected '" + EscapeControl(m->type()) + "'";
      }
    }
    std::this_thread::sleep_for(kRetry);
  }
  if (!place)
    return Error{"control plane: " + Who(c_.rank, c_.host) + " could not join rank 0 at " +
                 target + ": " + last + " (retried for " + FormatRate(c_.join_timeout_s) + " s)"};
  // 2. Connect to the parent it named, and say hello.
  const std::string paddr = place->Str("addr");
  const int pport = static_cast<int>(place->Int("port"));
  parent_rank_ = static_cast<int>(place->Int("parent"));
  depth_ = static_cast<int>(place->Int("depth", 1));
  const std::string ptarget = paddr + ":" + std::to_string(pport) + " (" + Who(parent_rank_, "") + ")";
  while (!parent_ && Now() < deadline) {
    const std::string nonce = NewNonce();
    auto hello = [&](const std::string& challenge) {
      return Introduce("hello", challenge, nonce);
    };
    auto reply = Ask(paddr, pport, ProofKindName(c_.prover.kind()), hello,
                     std::min(5.0, deadline - Now()),
                     std::max(0.1, deadline - Now()));
    auto m = reply.ok() ? Msg::Decode(reply->frame) : Result<Msg>(reply.error());
    if (m.ok() && m->type() == "welcome" && !ProvesDown("tree", *m, reply->challenge, nonce)) {
      m = Error{"a welcome without this job's proof"};
    }
    if (m.ok() && m->type() == "welcome") {
      parent_ = std::make_unique<Peer>();
      parent_->rank = parent_rank_;
      parent_->addr = paddr;
      parent_->link = std::make_unique<FrameLink>(std::move(reply->fd), kMaxFrame);
      break;
    }
    last = m.ok() ? "answered '" + EscapeControl(m->type()) + "'" : m.error().message;
    std::this_thread::sleep_for(kRetry);
  }
  if (!parent_)
    return Error{"control plane: " + Who(c_.rank, c_.host) + " could not connect to its parent " +
                 ptarget + ": " + last};
  SendUp(Msg("up").Set("rank", c_.rank).Set("host", c_.host).Encode());
  return RunUntilGo(deadline + 5);
}

// The same loop the supervisor runs later, until rank 0 says go.
Status ControlPlane::RunUntilGo(double deadline) {
  for (;;) {
    if (!abort_.empty()) return Error{abort_};
    if (c_.rank == 0 && static_cast<int>(up_.size()) == c_.size - 1) return Ok();
    if (c_.rank != 0 && go_) return Ok();
    if (parent_lost_) return Error{"control plane: " + Who(c_.rank, c_.host) +
                                   " lost its parent before the job started"};
    double now = Now();
    if (now >= deadline)
      return Error{c_.rank == 0 ? "" : "control plane: rank 0 did not say go within " +
                                           FormatRate(c_.join_timeout_s) + " s"};
    std::vector<pollfd> fds;
    AddPollFds(&fds);
    const double next = std::min(deadline, NextDeadline(now));
    poll(fds.data(), fds.size(), static_cast<int>(std::max(0.0, next - now) * 1000) + 1);
    now = Now();
    OnPoll(fds.data(), fds.size(), now);
    OnTimer(now);
  }
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

// ---- The doors: rank 0's MASTER_PORT (joining only) and each shim's tree port

// A flood at this shim's own port for the tree, said by the shim that saw it.
void ControlPlane::SayTreeCrowd() const {
  const std::string flood =
      tree_crowd_.Note("rank " + std::to_string(c_.rank) + "'s control-plane port " +
                       std::to_string(listen_port_) + " (on " + c_.host + ")");
  if (!flood.empty()) LogWarning("control plane: " + flood);
}

size_t ControlPlane::Unproven(const std::vector<std::unique_ptr<Peer>>& peers) {
  size_t n = 0;
  for (const auto& p : peers)
    if (p->rank == -1) ++n;
  return n;
}

// Past kMaxPending unproven connections a newcomer takes the seat of the
// one that has sent least (shim/net/crowded_door.h): strangers that connect
// and say nothing cannot keep the job's shims out. A shim whose connection
// is closed so asks again.
void ControlPlane::AcceptPending(int listen_fd, std::vector<std::unique_ptr<Peer>>* into,
                                 DoorCrowd* crowd, double now) {
  for (size_t burst = 0; burst < kDoorAcceptBurst; ++burst) {
    int fd = Accept(listen_fd);
    if (fd < 0) return;
    if (Unproven(*into) >= kMaxPending) {
      std::vector<DoorSeat> seats;
      std::vector<size_t> at;
      for (size_t i = 0; i < into->size(); ++i) {
        const Peer& q = *(*into)[i];
        if (q.rank != -1) continue;
        seats.push_back({q.link->received(), q.accepted_at});
        at.push_back(i);
      }
      const size_t freed = at[SeatToFree(seats)];
      crowd->GaveUp((*into)[freed]->link->received());
      into->erase(into->begin() + static_cast<long>(freed));
    }
    auto p = std::make_unique<Peer>();
    p->link = std::make_unique<FrameLink>(Fd(fd), kMaxHelloFrame);
    p->hello_until = now + kHelloS;
    p->accepted_at = now;
    // A fresh challenge for each connection: a proof seen on another one
    // (a replay) answers none of ours.
    p->challenge = NewNonce();
    p->link->Send(Msg("challenge")
                      .Set("n", p->challenge)
                      .Set("kind", std::string(ProofKindName(c_.prover.kind())))
                      .Encode());
    into->push_back(std::move(p));
  }
}

void ControlPlane::ReadDoor(Peer& p, double now) {
  (void)now;
  p.link->Flush();
  if (p.rank == -2) {  // answered: wait for the peer to close
    std::vector<std::string> ignored;
    p.link->Read(&ignored);
    return;
  }
  std::vector<std::string> frames;
  p.link->Read(&frames);
  SkipGreeting(&p, &frames);
  if (frames.empty()) {
    if (p.link->broken()) ++refused_;
    return;
  }
  auto m = Msg::Decode(frames[0]);
  auto refuse = [&](const std::string& why) {
    ++refused_;
    p.link->Send(Msg("refused").Set("why", why).Encode());
    p.rank = -2;
  };
  if (!m.ok() || m->type() != "join" || m->Str("v") != kVersion) return refuse("not a join");
  if (std::string why; !ProvesUp(p, "join", *m, &why)) return refuse(why);
  const long long rank = m->Int("rank"), size = m->Int("size"), port = m->Int("port");
  if (size != c_.size)
    return refuse("world size " + std::to_string(size) + ", but rank 0 has " +
                  std::to_string(c_.size));
  if (rank < 1 || rank >= c_.size || port < 1 || port > 65535) return refuse("bad rank or port");
  const std::string host = m->Str("host");
  const std::string addr = PeerAddress(p.link->fd());
  // Shims are grouped by the node they come from: the address rank 0 sees
  // (host names may be shared, or lie), rank 0's own when they are equal.
  const std::string node = addr == LocalAddress(p.link->fd()) ? kRootNode : addr;
  TreePlace place = planner_->Assign(static_cast<int>(rank), node, addr, static_cast<int>(port));
  // Rank 0's own address, as this shim reached it.
  if (place.parent == 0) place.addr = LocalAddress(p.link->fd());
  machine_.NoteHost(static_cast<int>(rank), host);
  Msg reply("place");
  reply.Set("parent", place.parent).Set("addr", place.addr).Set("port", place.port);
  reply.Set("depth", place.depth);
  reply.Set("proof", Proof("join", ProofDirection::kDown, p.challenge, m->Str("nonce"),
                           static_cast<int>(rank)));
  p.link->Send(reply.Encode());
  p.rank = -2;
}

// A connection's first frame is its greeting ("hi", sent before the
// challenge could arrive): nothing to act on.
void ControlPlane::SkipGreeting(Peer* p, std::vector<std::string>* frames) {
  if (p->greeted || frames->empty()) return;
  p->greeted = true;
  frames->erase(frames->begin());
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
  machine_.OnShimLost("the control plane lost " + Who(rank, p.host) + " (" + EscapeControl(why) +
                          ")",
                      now);
}

void ControlPlane::ParentGone(const std::string& why, double now) {
  if (parent_lost_) return;
  parent_lost_ = true;
  if (!go_) {
    abort_ = "control plane: lost its parent, " + Who(parent_rank_, "") + " (" + why + ")";
    return;
  }
  machine_.OnParentLost("aml-shim: lost the control plane: the link to its parent, " +
                            Who(parent_rank_, "") + " at " + parent_->addr + ", " +
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
