// The control plane's doors and its join (plane.h): rank 0's MASTER_PORT
// while shims join, each shim's own port for its children, the proofs
// exchanged there, and the wait until rank 0 says go.
#include "shim/control/plane.h"

#include <sys/socket.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "shim/base/clock.h"
#include "shim/base/log.h"
#include "shim/base/text_list.h"
#include "shim/base/units.h"

namespace aml {
namespace {

constexpr size_t kMaxPending = 64;           // strangers waiting at a door
constexpr double kHelloS = 5;                // from accept to hello
constexpr auto kRetry = std::chrono::milliseconds(100);

Deadline DeadlineIn(double s) {
  return Clock::now() + std::chrono::milliseconds(static_cast<long>(std::max(0.0, s) * 1000));
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
  auto hi = RecvFrame(fd->get(), ControlPlane::kMaxHelloFrame, DeadlineIn(answer_s));
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
  auto reply = RecvFrame(fd->get(), ControlPlane::kMaxHelloFrame, DeadlineIn(answer_s));
  if (!reply.ok()) return reply.error();
  return Answer{std::move(*fd), challenge->Str("n"), std::move(*reply)};
}

}  // namespace

// This shim's first frame at a door: a join (rank 0's MASTER_PORT) or a
// hello (its parent's port), answering that connection's challenge.
Msg ControlPlane::Introduce(const std::string& type, const std::string& challenge,
                            const std::string& nonce) const {
  std::string why;
  Msg m = Introduction(c_.prover, type, c_.rank, c_.size, c_.host, listen_port_, challenge, nonce,
                       &why);
  if (!why.empty()) LogVerbose("control plane: " + why);
  return m;
}

// The door's answer to this shim proves itself for our connection.
bool ControlPlane::ProvesDown(const std::string& door, const Msg& m, const std::string& challenge,
                              const std::string& nonce) const {
  return ProvesDoor(c_.prover, door, m, challenge, nonce, c_.rank);
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
  p->tree_.Start(p->Now());
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
    tree_.SendDown(Msg("go").Encode());
    tree_.set_depth(planner_->depth());
    return st;
  }
  // Not everyone joined: the ones that did hear why, and nothing starts.
  std::vector<int> missing;
  for (int r = 1; r < c_.size; ++r)
    if (!tree_.ups().count(r)) missing.push_back(r);
  const std::string why = "control plane: " + RankList(missing) + " of " +
                          std::to_string(c_.size) + " shims did not join rank 0 at " +
                          c_.master_addr + ":" + std::to_string(c_.master_port) + " within " +
                          FormatRate(c_.join_timeout_s) + " s (--preflight-timeout)" +
                          (refused_ ? "; " + std::to_string(refused_) +
                                          " connection(s) without this job's proof were refused"
                                    : "") +
                          (flood.empty() ? "" : "; " + flood);
  tree_.SendDown(Msg("abort").Set("why", why).Encode());
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
        return Introduce("join", challenge, nonce);
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
    return Error{"control plane: " + ShimName(c_.rank, c_.host) + " could not join rank 0 at " +
                 target + ": " + last + " (retried for " + FormatRate(c_.join_timeout_s) + " s)"};
  // 2. Connect to the parent it named, and say hello.
  const std::string paddr = place->Str("addr");
  const int pport = static_cast<int>(place->Int("port"));
  parent_rank_ = static_cast<int>(place->Int("parent"));
  tree_.set_depth(static_cast<int>(place->Int("depth", 1)));
  const std::string ptarget = paddr + ":" + std::to_string(pport) + " (" + ShimName(parent_rank_, "") + ")";
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
    return Error{"control plane: " + ShimName(c_.rank, c_.host) + " could not connect to its parent " +
                 ptarget + ": " + last};
  tree_.SetParent(parent_rank_, paddr);
  tree_.SendUp(Msg("up").Set("rank", c_.rank).Set("host", c_.host).Encode());
  return RunUntilGo(deadline + 5);
}

// --spares: the root was lost and this shim links to its heir in its
// place (job_heir.cc), with the same hello as to its parent at the join,
// within 5 s. False when the heir does not answer so.
bool ControlPlane::Relink(int heir, const std::string& at, double now) {
  (void)now;
  const size_t colon = at.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string addr = at.substr(0, colon);
  const int port = std::atoi(at.c_str() + colon + 1);
  const std::string nonce = NewNonce();
  auto hello = [&](const std::string& challenge) { return Introduce("hello", challenge, nonce); };
  auto reply = Ask(addr, port, ProofKindName(c_.prover.kind()), hello, 5.0, 5.0);
  auto m = reply.ok() ? Msg::Decode(reply->frame) : Result<Msg>(reply.error());
  if (m.ok() && m->type() == "welcome" && !ProvesDown("tree", *m, reply->challenge, nonce))
    m = Error{"a welcome without this job's proof"};
  if (!m.ok() || m->type() != "welcome") {
    LogWarning("control plane: " + ShimName(c_.rank, c_.host) + " could not link to the root's heir, " +
               ShimName(heir, "") + " at " + EscapeControl(at) + ": " +
               (m.ok() ? "it answered '" + EscapeControl(m->type()) + "'" : m.error().message));
    return false;
  }
  parent_ = std::make_unique<Peer>();
  parent_->rank = heir;
  parent_->addr = addr;
  parent_->link = std::make_unique<FrameLink>(std::move(reply->fd), kMaxFrame);
  parent_rank_ = heir;
  return true;
}

// The heir asks the root's successor how long ago it last heard the root:
// the same proven hello as a relink's, marked as one that only asks (the
// successor answers in its welcome and makes no link), each step within
// kAskS. Short: the ask blocks this shim's loop, and when the root is
// frozen the successor finds it silent too and links here, blocked as
// long as this shim does not answer (5 s at most, Relink): a longer ask
// left both waiting on each other past the relink's 5 s, and every child
// of a frozen root cut off (test_netns_root, before this was short).
double ControlPlane::RootHeardAgo(int shim, const std::string& at, double now) {
  (void)now;
  const size_t colon = at.rfind(':');
  if (colon == std::string::npos) return -1;
  const std::string nonce = NewNonce();
  auto hello = [&](const std::string& challenge) {
    return Introduce("hello", challenge, nonce).Set("ask", 1);
  };
  auto reply = Ask(at.substr(0, colon), std::atoi(at.c_str() + colon + 1),
                   ProofKindName(c_.prover.kind()), hello, kAskS, kAskS);
  auto m = reply.ok() ? Msg::Decode(reply->frame) : Result<Msg>(reply.error());
  if (m.ok() && m->type() == "welcome" && !ProvesDown("tree", *m, reply->challenge, nonce))
    m = Error{"a welcome without this job's proof"};
  if (!m.ok() || m->type() != "welcome") {
    LogVerbose("control plane: the root's successor, " + ShimName(shim, "") + " at " +
               EscapeControl(at) + ", did not answer whether it hears the root: " +
               (m.ok() ? "it answered '" + EscapeControl(m->type()) + "'" : m.error().message));
    return -1;
  }
  const double ago = m->Number("ra", -1);
  LogVerbose("control plane: the root's successor, " + ShimName(shim, "") +
             (ago >= 0 ? ", last heard the root " + FormatNumber(ago, "%.1f") + " s ago"
                       : ", hears no root"));
  return ago;
}

// The same loop the supervisor runs later, until rank 0 says go.
Status ControlPlane::RunUntilGo(double deadline) {
  for (;;) {
    if (!tree_.abort().empty()) return Error{tree_.abort()};
    if (c_.rank == 0 && tree_.all_up()) return Ok();
    if (c_.rank != 0 && tree_.go()) {
      SayTreeCrowd();
      return Ok();
    }
    if (tree_.parent_lost()) return Error{"control plane: " + ShimName(c_.rank, c_.host) +
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
    p->link->Send(DoorChallenge(p->challenge, c_.prover.kind()).Encode());
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
  const Visitor v = ReadJoin(c_.prover, c_.size, p.challenge, frames[0]);
  if (!v.ok) {
    ++refused_;
    p.link->Send(Msg("refused").Set("why", v.why).Encode());
    p.rank = -2;
    return;
  }
  const TreePlace place = PlaceJoiner(planner_.get(), &tree_.machine(), v,
                                     PeerAddress(p.link->fd()), LocalAddress(p.link->fd()));
  Msg reply = DoorAnswer(c_.prover, "place", "join", p.challenge, v);
  reply.Set("parent", place.parent).Set("addr", place.addr).Set("port", place.port);
  reply.Set("depth", place.depth);
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

}  // namespace aml
