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
constexpr double kFailWindowS = 0.1;         // failures that count as first
constexpr double kVerdictWaitS = 5;          // a failing node waits for rank 0's word
constexpr double kFlushS = 1;                // last words before exit
constexpr double kCollectS = 20;             // rank 0 waits for stacks (readers 10 s, SIGABRT 5 s)
constexpr double kStopWaitS = 30;            // a node waits for rank 0 after its stacks
constexpr double kEndingS = 30;              // past --grace, for every shim to end its ranks
constexpr auto kRetry = std::chrono::milliseconds(100);
constexpr size_t kMaxSignature = 512;
constexpr double kMinSilenceS = 5;           // a steady link's allowance, at least
constexpr double kMaxSilenceS = 30;          // and at most (and at start-up)
constexpr double kGapFactor = 4;             // times its longest recent gap
constexpr double kGapDecay = 0.9;            // per frame: a past spike fades
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

ControlPlane::ControlPlane(const PlaneConfig& c) : c_(c) {
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
  p->attempt_wall_ = WallSeconds();
  p->my_output_ = now;
  p->next_beat_ = now + p->beat_s_;
  p->go_at_ = now;
  for (auto& child : p->children_) child->last_heard = child->output_time = now;
  if (p->parent_) p->parent_->last_heard = now;
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
  shim_hosts_[0] = c_.host;
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
  shim_hosts_[static_cast<int>(rank)] = host;
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
      p.last_heard = p.output_time = now;
      p.max_gap = 0;
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
    Heard(p, now);
    OnChildMsg(p, f, *m, now);
    if (p.done) return;
  }
  if (p.link->broken() && p.rank >= 0 && !p.done) PeerGone(p, p.link->why(), now);
}

void ControlPlane::OnChildMsg(Peer& p, const std::string& frame, const Msg& m, double now) {
  const std::string& t = m.type();
  if (t == "beat") {
    const double age = m.Number("age", 0);
    if (age >= 0) p.output_time = std::max(p.output_time, now - age);
  } else if (t == "up") {
    if (c_.rank == 0) up_.insert(static_cast<int>(m.Int("rank")));
    else SendUp(frame);
  } else if (t == "bye") {
    // Its launcher stopped it: the job stops with it, with its status.
    p.done = true;
    p.rank = -2;
    OnBye(frame, m, now);
  } else if (t == "done") {
    // Its part of the job ended well.
    p.done = true;
    p.rank = -2;  // closed after this round
    done_below_ += static_cast<int>(std::max<int64_t>(1, m.Int("n", 1)));
    MaybeSendDone(now);
  } else if (c_.rank != 0) {
    if (t == "fail" || t == "lost" || t == "stacks" || t == "ended") SendUp(frame);
  } else if (t == "ended") {
    NoteEnded(static_cast<int>(m.Int("shim", -1)), m.Number("out", 0), now);
  } else if (t == "fail") {
    FailNote f;
    f.wall_time = m.Number("time");
    f.rank = static_cast<int>(m.Int("rank"));
    f.node = static_cast<int>(m.Int("node"));
    f.code = static_cast<int>(m.Int("code", 1));
    f.host = m.Str("host");
    f.status = m.Str("status");
    f.summary = m.Str("summary");
    f.json = m.Str("json");
    NoteFailure(std::move(f), now);
  } else if (t == "lost") {
    if (stopped_ || signalled_) return;
    StopAsLost(m.Str("what"));
  } else if (t == "stacks") {
    NoteStacks(m);
  }
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
    Heard(*parent_, now);
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
  } else if (t == "abort") {
    abort_ = m.Str("why");
    SendDown(frame);
  } else if (t == "collect") {
    SendDown(frame);
    if (!collecting_ && !stopped_) {
      collecting_ = true;
      orders_.push_back(LinkOrder::Of(LinkOrder::Kind::kCollectStacks));
      stop_wait_until_ = now + kStopWaitS;
    }
  } else if (t == "end") {
    // Rank 0 restarts the job: end this node's ranks, say so, wait.
    SendDown(frame);
    if (stopped_ || signalled_ || ending_) return;
    ending_ = true;
    orders_.push_back(LinkOrder::Of(LinkOrder::Kind::kEndAttempt));
    MaybeSendEnded();
  } else if (t == "restart") {
    SendDown(frame);
    if (stopped_ || signalled_) return;
    LinkOrder o = LinkOrder::Of(LinkOrder::Kind::kRestart);
    o.restart = static_cast<int>(m.Int("n"));
    o.master_port = static_cast<int>(m.Int("port"));
    o.line = m.Str("line");
    restarts_ = o.restart;
    ResetRound(now);
    orders_.push_back(std::move(o));
  } else if (t == "stop") {
    SendDown(frame);
    if (stopped_) return;
    ending_ = false;
    stopped_ = true;
    stop_at_ = now;
    orders_.push_back(
        LinkOrder::Stop(static_cast<int>(m.Int("code", 1)), StopLine(m), ""));
  } else if (t == "bye") {
    parent_lost_ = true;  // it goes; not a loss to report
    OnBye(frame, m, now);
  }
}

// A shim whose launcher stopped it said so: pass it on, everywhere, once.
void ControlPlane::OnBye(const std::string& frame, const Msg& m, double now) {
  if (stopped_ || signalled_) return;
  stopped_ = true;
  stop_at_ = now;
  SendUp(frame);
  SendDown(frame);
  orders_.push_back(LinkOrder::Stop(static_cast<int>(m.Int("code", 143)),
                              "aml-shim: stopped: " + EscapeControl(m.Str("what")) + "\n", ""));
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
  (void)now;
  const int rank = p.rank;
  p.done = true;
  p.rank = -2;
  if (stopped_ || signalled_ || !go_) return;
  const std::string what = "the control plane lost " + Who(rank, p.host) + " (" +
                           EscapeControl(why) + ")";
  if (c_.rank == 0) {
    StopAsLost(what);
  } else {
    SendUp(Msg("lost").Set("what", what).Encode());
  }
}

void ControlPlane::ParentGone(const std::string& why, double now) {
  if (parent_lost_) return;
  parent_lost_ = true;
  if (!go_) {
    abort_ = "control plane: lost its parent, " + Who(parent_rank_, "") + " (" + why + ")";
    return;
  }
  if (stopped_ || signalled_ || done_sent_) return;
  // Cut off from rank 0: this node cannot hear the job's verdicts, so it
  // ends its part (the launcher ends the rest, or they learn it the same way).
  stopped_ = true;
  stop_at_ = now;
  SendDown(Msg("stop").Set("kind", std::string("lost")).Set("code", 125)
               .Set("what", "the control plane lost " + Who(c_.rank, c_.host) + "'s parent")
               .Encode());
  orders_.push_back(LinkOrder::Stop(125,
      "aml-shim: lost the control plane: the link to its parent, " + Who(parent_rank_, "") +
          " at " + parent_->addr + ", " + EscapeControl(why) + "; ending this node's ranks\n",
      ""));
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

// A frame from `p`: its gap since the last one feeds its allowance.
void ControlPlane::Heard(Peer& p, double now) {
  if (p.last_heard > 0) p.max_gap = std::max(now - p.last_heard, p.max_gap * kGapDecay);
  p.last_heard = now;
}

// How long `p` may stay silent before it is lost (see plane.h).
double ControlPlane::Allowance(const Peer& p, double now) const {
  if (now < go_at_ + c_.startup_s) return kMaxSilenceS;
  return std::clamp(kGapFactor * p.max_gap, kMinSilenceS, kMaxSilenceS);
}

void ControlPlane::Beat(double now) {
  next_beat_ = now + beat_s_;
  if (parent_ && !parent_lost_)
    parent_->link->Send(Msg("beat").SetNumber("age", now - SubtreeOutput()).Encode());
  SendDown(Msg("beat").Encode());
}

double ControlPlane::NextDeadline(double now) const {
  double next = std::min(now + 3600, next_beat_);
  // Moments that only let MayExit say yes count while they are ahead.
  auto ahead = [&](double t) {
    if (t > now) next = std::min(next, t);
  };
  for (const auto& p : door_pending_) next = std::min(next, p->hello_until);
  // (Every deadline below is cleared or moved by OnTimer once it passes, or
  // counts only while ahead: the loop never spins.)
  for (const auto& p : children_) {
    if (p->rank == -1) next = std::min(next, p->hello_until);
    else if (p->rank >= 0 && go_) next = std::min(next, p->last_heard + Allowance(*p, now));
  }
  if (parent_ && !parent_lost_ && go_)
    next = std::min(next, parent_->last_heard + Allowance(*parent_, now));
  // The allowances shrink when start-up is over: look again then.
  if (go_) ahead(go_at_ + c_.startup_s);
  if (fail_window_until_ > 0) next = std::min(next, fail_window_until_);
  if (failed_at_ > 0 && !stopped_) ahead(failed_at_ + kVerdictWaitS);
  if (stop_at_ > 0) ahead(stop_at_ + kFlushS);
  if (stop_at_ > 0) ahead(stop_at_ + c_.grace_s + kFlushS);
  if (done_sent_) ahead(done_at_ + kFlushS);
  if (c_.rank == 0 && collecting_ && !stopped_ && !ending_) next = std::min(next, collect_until_);
  if (c_.rank != 0 && collecting_ && !stopped_ && !ending_) next = std::min(next, stop_wait_until_);
  if (c_.rank == 0 && ending_ && !stopped_)
    next = std::min(next, backoff_ ? backoff_until_ : ending_until_);
  if (c_.rank == 0 && go_ && c_.hang_timeout_s && !collecting_ && !stopped_ && !ending_)
    next = std::min(next, SubtreeOutput() + *c_.hang_timeout_s + beat_s_ * depth_);
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
  for (auto& p : children_) {
    if (p->rank == -1 && now >= p->hello_until) {
      p->rank = -2;
      ++refused_;
    } else if (p->rank >= 0 && go_ && now >= p->last_heard + Allowance(*p, now)) {
      PeerGone(*p, "silent for " + FormatNumber(now - p->last_heard, "%.1f") + " s", now);
    }
  }
  if (parent_ && !parent_lost_ && go_ && now >= parent_->last_heard + Allowance(*parent_, now))
    ParentGone("silent for " + FormatNumber(now - parent_->last_heard, "%.1f") + " s", now);
  if (now >= next_beat_) Beat(now);
  if (fail_window_until_ > 0 && now >= fail_window_until_) DecideFailure();
  if (c_.rank == 0 && collecting_ && !stopped_ && !ending_ && now >= collect_until_)
    FinishCollect(now);
  if (c_.rank == 0 && backoff_ && !stopped_ && !signalled_ && now >= backoff_until_)
    SendRestart(now);
  if (c_.rank == 0 && ending_ && !backoff_ && !stopped_ && now >= ending_until_) {
    ending_ = false;
    StopAsLost("cannot restart: " + JoinCapped(ShimsNotIn(ended_), 8) +
               " did not end its ranks within " + FormatRate(c_.grace_s + kEndingS) + " s");
  }
  if (c_.rank != 0 && collecting_ && !stopped_ && !ending_ && now >= stop_wait_until_) {
    stopped_ = true;
    stop_at_ = now;
    orders_.push_back(LinkOrder::Stop(124,
                                "aml-shim: stopped: the job was judged hung, and rank 0's shim "
                                "said nothing more within " + FormatRate(kStopWaitS) + " s\n",
                                ""));
  }
  if (c_.rank == 0 && go_ && c_.hang_timeout_s && !collecting_ && !stopped_ && !ending_) {
    const double silent = now - SubtreeOutput();
    if (silent >= *c_.hang_timeout_s + beat_s_ * depth_) {
      hang_silent_s_ = silent;
      StartCollect(now);
    }
  }
  ForgetGoneChildren(now);
  MaybeSendDone(now);
}

// This shim's part of the job ended well and every shim below it said so:
// it tells its parent, which then closes the link; the shim may go.
void ControlPlane::MaybeSendDone(double now) {
  // Ranks ended by the hang's SIGABRT are not a part of the job that ended well.
  if (c_.rank == 0 || done_sent_ || !children_done_ || stopped_ || signalled_ || parent_lost_ ||
      failed_at_ > 0 || collecting_ || ending_ || outcome_.code != 0)
    return;
  for (const auto& ch : children_)
    if (ch->rank >= 0 && !ch->done) return;
  done_sent_ = true;
  done_at_ = now;
  SendUp(Msg("done").Set("n", 1 + done_below_).Encode());
}

// ---- What this node sees

void ControlPlane::OnOutput(double now) { my_output_ = now; }

void ControlPlane::OnChildFailed(const LocalFailure& f) {
  const double now = Now();
  if (failed_at_ == 0) failed_at_ = now;
  if (stopped_ || signalled_ || collecting_ || ending_) return;
  FailNote n;
  n.wall_time = f.wall_time;
  n.rank = f.rank;
  n.node = c_.node;
  n.code = f.exit_code;
  n.host = c_.host;
  n.status = f.status;
  n.summary = f.summary;
  n.json = f.failure_json;
  n.local = true;
  if (c_.rank == 0) {
    NoteFailure(std::move(n), now);
    return;
  }
  Msg m("fail");
  m.SetNumber("time", n.wall_time).Set("rank", n.rank).Set("node", n.node).Set("code", n.code);
  m.Set("host", n.host).Set("status", n.status);
  // The summary travels whole but bounded (its stderr tail is 16 KiB at most).
  m.Set("summary", n.summary.substr(0, 64 << 10)).Set("json", n.json.substr(0, 64 << 10));
  SendUp(m.Encode());
}

void ControlPlane::OnStacks(const std::vector<RankStack>& stacks) {
  if (c_.rank == 0) {
    for (const RankStack& s : stacks) {
      const auto lines = SplitLines(s.text);
      reports_.push_back({s.rank, c_.node, c_.host, s.signature.substr(0, kMaxSignature),
                          s.signature.empty() && !lines.empty() ? lines[0] : ""});
    }
    reported_.insert(0);
    if (static_cast<int>(reported_.size()) == c_.size) FinishCollect(Now());
    return;
  }
  std::string list = "[";
  for (const RankStack& s : stacks) {
    if (list.size() > 1) list += ",";
    const auto lines = SplitLines(s.text);
    Msg one("s");
    one.Set("rank", s.rank).Set("sig", s.signature.substr(0, kMaxSignature));
    one.Set("why", s.signature.empty() && !lines.empty() ? lines[0].substr(0, 300) : "");
    list += one.Encode();
  }
  list += "]";
  Msg m("stacks");
  m.Set("shim", c_.rank).Set("node", c_.node).Set("host", c_.host).SetRaw("stacks", list);
  SendUp(m.Encode());
}

void ControlPlane::OnChildrenDone(const NodeOutcome& o) {
  outcome_ = o;
  children_done_ = true;
  if (c_.rank == 0 && o.code == 0 && !ending_ && !collecting_ && failed_at_ == 0)
    own_done_well_ = true;
  MaybeSendEnded();
  MaybeSendDone(Now());
}

void ControlPlane::OnShimSignalled(int sig, const std::string& why) {
  if (signalled_) return;
  signalled_ = true;
  stop_at_ = Now();
  if (stopped_) return;
  // The others stop with it, as they would if the launcher had signalled
  // them too (it usually has), with the same status.
  Msg bye("bye");
  bye.Set("what", Who(c_.rank, c_.host) +
                      (why.empty() ? " was stopped by its launcher (" + SignalName(sig) + ")"
                                   : " ended its ranks: " + why));
  bye.Set("code", 128 + sig);
  SendUp(bye.Encode());
  SendDown(bye.Encode());
}

bool ControlPlane::MayExit() const {
  auto flushed = [&] {
    if (parent_ && !parent_lost_ && parent_->link->wants_write()) return false;
    for (const auto& ch : children_)
      if (ch->rank >= 0 && ch->link->wants_write()) return false;
    return true;
  };
  const double now = MonotonicSeconds();
  // The launcher stopped this shim: in every phase (a restart under way, a
  // failure waiting for its verdict, a roll-call) it goes once its last
  // words are sent (its bye, at most kFlushS).
  if (signalled_) return flushed() || now >= stop_at_ + kFlushS;
  if (!orders_.empty() || (collecting_ && !stopped_)) return false;
  if (ending_ && !stopped_) return false;  // a restart is under way
  // A failure waits for the verdict while restarts remain.
  if (c_.size == 1) return !(failed_at_ > 0 && !stopped_ && c_.max_restarts > 0);
  if (stopped_ || parent_lost_) {
    // The shims below end first (their teardown takes up to --grace), so
    // that a launcher which ends the job when rank 0 exits cuts no one short.
    for (const auto& ch : children_)
      if (ch->rank >= 0 && !ch->link->broken() && now < stop_at_ + c_.grace_s + kFlushS)
        return false;
    return flushed() || now >= stop_at_ + kFlushS;
  }
  if (!children_done_) return false;
  // A failing node waits a moment for rank 0's verdict (the line it prints);
  // while restarts remain, for the verdict itself (or the loss of its parent).
  if (failed_at_ > 0) return restarts_ >= c_.max_restarts && now >= failed_at_ + kVerdictWaitS;
  if (c_.rank == 0) {
    for (const auto& ch : children_)
      if (ch->rank >= 0 && !ch->done) return false;  // the job is not over
    return true;
  }
  // Gone once its parent heard "done" (the parent closes), or a moment after.
  return done_sent_ && (parent_->link->broken() || now >= done_at_ + kFlushS);
}

bool ControlPlane::PrintsOwnFailure() const { return c_.rank == 0 || parent_lost_; }

std::optional<LinkOrder> ControlPlane::TakeOrder() {
  if (orders_.empty()) return std::nullopt;
  LinkOrder o = std::move(orders_.front());
  orders_.pop_front();
  return o;
}

// ---- Rank 0's decisions

void ControlPlane::NoteFailure(FailNote f, double now) {
  if (stopped_ || signalled_ || collecting_ || ending_) return;
  // One shim sees its failures in order: no other node's to wait for.
  if (fails_.empty()) fail_window_until_ = now + (c_.size == 1 ? 0 : kFailWindowS);
  fails_.push_back(std::move(f));
}

void ControlPlane::DecideFailure() {
  fail_window_until_ = 0;
  if (fails_.empty() || stopped_) return;
  const FailNote* first = &fails_[0];
  for (const FailNote& f : fails_)
    if (f.wall_time < first->wall_time) first = &f;
  Msg stop("stop");
  stop.Set("kind", std::string("fail")).Set("code", first->code).Set("rank", first->rank);
  stop.Set("node", first->node).Set("host", first->host).Set("status", first->status);
  stop.Set("by", c_.host);
  LinkOrder own = LinkOrder::Stop(first->code, "", "");
  if (!first->local) {
    own.message = first->summary;
    own.failure_json = first->json;
  }
  AttemptRecord a = NewAttempt(first->wall_time);
  a.exit_code = first->code;
  a.rank = first->rank;
  a.what = "rank " + std::to_string(first->rank) + " failed (" + EscapeControl(first->status) + ")";
  EndAttempt(std::move(a), stop, std::move(own), first->local ? "" : first->summary,
             first->local);
}

// A shim lost (or one that never answered): every shim exits 125.
void ControlPlane::StopAsLost(const std::string& what) {
  StopJob(Msg("stop").Set("kind", std::string("lost")).Set("code", 125).Set("what", what),
          LinkOrder::Stop(125, "aml-shim: " + EscapeControl(what) + ": ending the job\n", ""));
}

// Rank 0: every shim not in `heard`, by rank and host.
std::vector<std::string> ControlPlane::ShimsNotIn(const std::set<int>& heard) const {
  std::vector<std::string> out;
  for (int s = 0; s < c_.size; ++s)
    if (!heard.count(s)) {
      auto it = shim_hosts_.find(s);
      out.push_back(Who(s, it == shim_hosts_.end() ? "" : it->second));
    }
  return out;
}

void ControlPlane::StopJob(const Msg& stop, LinkOrder own) {
  if (stopped_) return;
  stopped_ = true;
  stop_at_ = Now();
  SendDown(stop.Encode());
  orders_.push_back(std::move(own));
}

std::string ControlPlane::StopLine(const Msg& m) const {
  const std::string kind = m.Str("kind");
  const std::string by = EscapeControl(m.Str("by"));
  if (kind == "fail") {
    const int rank = static_cast<int>(m.Int("rank"));
    const std::string status = EscapeControl(m.Str("status"));
    if (std::find(c_.ranks.begin(), c_.ranks.end(), rank) != c_.ranks.end())
      return "aml-shim: rank " + std::to_string(rank) + " failed (" + status +
             "): the job's first failure; rank 0's shim (on " + by + ") printed its summary\n";
    return "aml-shim: stopped: rank " + std::to_string(rank) + " on node " +
           std::to_string(m.Int("node")) + " (host " + EscapeControl(m.Str("host")) +
           ") failed first (" + status + ")\n";
  }
  if (kind == "hang")
    return "aml-shim: stopped: the job was hung (no output for " +
           FormatNumber(m.Number("silent"), "%.0f") + " s); rank 0's shim (on " + by +
           ") printed the roll-call\n";
  return "aml-shim: stopped: " + EscapeControl(m.Str("what")) + "\n";
}

void ControlPlane::StartCollect(double now) {
  collecting_ = true;
  collect_until_ = now + kCollectS;
  SendDown(Msg("collect").Encode());
  orders_.push_back(LinkOrder::Of(LinkOrder::Kind::kCollectStacks));
}

void ControlPlane::NoteStacks(const Msg& m) {
  if (!collecting_ || stopped_) return;
  const int shim = static_cast<int>(m.Int("shim"));
  if (shim <= 0 || shim >= c_.size || reported_.count(shim)) return;
  reported_.insert(shim);
  const JsonValue* list = m.Raw("stacks");
  if (list && list->kind == JsonValue::Kind::kArray) {
    for (const JsonValue& v : list->items) {
      const JsonValue* r = v.Find("rank");
      const JsonValue* sig = v.Find("sig");
      const JsonValue* why = v.Find("why");
      if (!r || r->kind != JsonValue::Kind::kNumber) continue;
      reports_.push_back({std::atoi(r->text.c_str()), static_cast<int>(m.Int("node")),
                          m.Str("host"), sig ? sig->text : "", why ? why->text : ""});
    }
  }
  if (static_cast<int>(reported_.size()) == c_.size) FinishCollect(MonotonicSeconds());
}

void ControlPlane::FinishCollect(double now) {
  (void)now;
  if (stopped_) return;
  HangFacts facts;
  facts.timeout_s = *c_.hang_timeout_s;
  facts.silent_s = hang_silent_s_;
  facts.world_size = c_.world_ranks;
  facts.reports = reports_;
  facts.missing = ShimsNotIn(reported_);
  facts.log_dir = c_.log_dir;
  Msg stop("stop");
  stop.Set("kind", std::string("hang")).Set("code", 124).SetNumber("silent", hang_silent_s_);
  stop.Set("by", c_.host);
  AttemptRecord a = NewAttempt(WallSeconds());
  a.exit_code = 124;
  a.hang = true;
  a.what = "the job was hung (no output for " + FormatNumber(hang_silent_s_, "%.0f") + " s)";
  const std::string roll_call = FormatRollCall(facts);
  EndAttempt(std::move(a), stop,
             LinkOrder::Stop(124, roll_call, HangJson(c_.run_id, facts)),
             roll_call, false);
}

// ---- Restarts (rank 0 decides; every shim obeys)

// The attempt under way, ended by a failure at `failure_wall` (CLOCK_REALTIME).
AttemptRecord ControlPlane::NewAttempt(double failure_wall) const {
  AttemptRecord a;
  a.number = restarts_ + 1;
  a.failure_wall = failure_wall;
  a.duration_s = std::max(0.0, failure_wall - attempt_wall_);
  return a;
}

// The attempt failed: end it everywhere and wait for every shim's word, or
// stop the job now when no restart may follow whatever they say.
void ControlPlane::EndAttempt(AttemptRecord a, const Msg& stop, LinkOrder own,
                              std::string message, bool print_own) {
  if (stopped_) return;
  a.shims_ended_well = done_below_ + (own_done_well_ ? 1 : 0);
  current_ = std::move(a);
  // Output not yet known: only what needs no output is decided here.
  RestartVerdict v = DecideRestart(current_, attempts_.empty() ? nullptr : &attempts_.back(),
                                   restarts_, c_.max_restarts);
  if (!v.restart) {
    attempts_.push_back(current_);
    FinalStop(stop.Encode(), std::move(own), v.why_not);
    return;
  }
  ending_ = true;
  ending_until_ = Now() + c_.grace_s + kEndingS;
  ended_.clear();
  ended_output_ = 0;
  ending_plan_ = Ending{stop.Encode(), std::move(own), std::move(message), print_own};
  SendDown(Msg("end").Encode());
  orders_.push_back(LinkOrder::Of(LinkOrder::Kind::kEndAttempt));
  MaybeSendEnded();
}

void ControlPlane::FinalStop(const std::string& stop, LinkOrder own, const std::string& why_not) {
  ending_ = false;
  if (c_.max_restarts > 0) {
    own.trailer = AttemptsText(attempts_, c_.max_restarts, why_not);
    own.attempts_json = AttemptsJson(attempts_);
    own.why_not = why_not;
  }
  if (stopped_) return;
  stopped_ = true;
  stop_at_ = Now();
  SendDown(stop);
  orders_.push_back(std::move(own));
}

// This node's ranks all ended after rank 0 said "end": say so (once).
void ControlPlane::MaybeSendEnded() {
  if (!ending_ || !children_done_ || ended_sent_) return;
  ended_sent_ = true;
  if (c_.rank == 0) {
    NoteEnded(0, outcome_.first_output_wall, Now());
    return;
  }
  SendUp(Msg("ended").Set("shim", c_.rank).SetNumber("out", outcome_.first_output_wall).Encode());
}

void ControlPlane::NoteEnded(int shim, double first_output_wall, double now) {
  if (!ending_ || stopped_ || shim < 0 || shim >= c_.size || ended_.count(shim)) return;
  ended_.insert(shim);
  if (first_output_wall > 0 && (ended_output_ == 0 || first_output_wall < ended_output_))
    ended_output_ = first_output_wall;
  if (static_cast<int>(ended_.size()) < c_.size) return;
  // Every shim's ranks ended: restart, unless it failed at start.
  current_.first_output_wall = ended_output_;
  current_.outputs_known = true;
  RestartVerdict v = DecideRestart(current_, attempts_.empty() ? nullptr : &attempts_.back(),
                                   restarts_, c_.max_restarts);
  attempts_.push_back(current_);
  if (!v.restart) {
    FinalStop(ending_plan_.stop, std::move(ending_plan_.own), v.why_not);
    return;
  }
  ++restarts_;
  LinkOrder o = LinkOrder::Of(LinkOrder::Kind::kRestart);
  o.restart = restarts_;
  const double backoff = BackoffS(attempts_);
  o.line = RestartLine(current_, restarts_, c_.max_restarts, backoff);
  o.message = ending_plan_.message;
  o.print_own_failure = ending_plan_.print_own;
  backoff_ = std::move(o);
  backoff_until_ = now + backoff;
  if (backoff <= 0) SendRestart(now);
}

// The back-off is over (or there was none): every shim starts its ranks.
void ControlPlane::SendRestart(double now) {
  LinkOrder o = std::move(*backoff_);
  backoff_.reset();
  o.master_port = PickPort();
  SendDown(Msg("restart").Set("n", o.restart).Set("port", o.master_port).Set("line", o.line)
               .Encode());
  ResetRound(now);
  orders_.push_back(std::move(o));
}

// A new attempt: nothing of the last one counts (its failures, its stacks,
// its silence).
void ControlPlane::ResetRound(double now) {
  ending_ = ended_sent_ = children_done_ = collecting_ = false;
  failed_at_ = 0;
  fails_.clear();
  fail_window_until_ = 0;
  reports_.clear();
  reported_.clear();
  hang_silent_s_ = 0;
  my_output_ = departed_output_ = now;
  for (auto& ch : children_) ch->output_time = now;
  attempt_wall_ = WallSeconds();
  outcome_ = NodeOutcome{};
}

// The next attempt's MASTER_PORT: one the kernel has free now (the last
// attempt's store may still hold its port, or its connections linger in
// TIME_WAIT); rank 0's ranks run where this shim runs.
int ControlPlane::PickPort() const {
  auto l = ListenAny(0);
  return l.ok() ? l->port : c_.master_port;
}

}  // namespace aml
