#include "shim/preflight/hello_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "shim/base/fd_limit.h"
#include "shim/base/hex.h"
#include "shim/base/log.h"
#include "shim/base/parse_int.h"
#include "shim/base/proof.h"
#include "shim/base/range_list.h"
#include "shim/net/local_socket.h"

namespace aml {
namespace {

constexpr size_t kMaxField = 64;       // a host name or address in a report
constexpr int kMaxListed = 3;          // strangers named in a report
constexpr std::chrono::milliseconds kFdBackoff{50};

std::string Cap(std::string s, size_t n = kMaxField) {
  if (s.size() > n) s = s.substr(0, n) + "...";
  return s;
}

// The length a frame's 4-byte header announces (the header must be in `buf`).
uint32_t FrameLength(const std::string& buf) {
  uint32_t len = 0;
  std::memcpy(&len, buf.data(), 4);
  return ntohl(len);
}

// A field of the space-separated hello: a host name may hold any byte (the
// kernel allows spaces), so every byte but [A-Za-z0-9._:-] is %XX, and the
// empty field is a lone "%".
std::string EncodeField(const std::string& v) {
  if (v.empty()) return "%";
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-') out += static_cast<char>(c);
    else out += "%" + Hex(&c, 1);
  }
  return out;
}

bool DecodeField(const std::string& in, std::string* out) {
  out->clear();
  if (in == "%") return true;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      *out += in[i];
      continue;
    }
    const std::vector<unsigned char> byte = Unhex(in.substr(i + 1, 2));
    if (byte.size() != 1) return false;  // "%", "%4" or "%zz"
    *out += static_cast<char>(byte[0]);
    i += 2;
  }
  return true;
}

}  // namespace

std::string EncodeHello(const Hello& h) {
  return std::string(kHelloMagic) + " " + FormatRanges(h.ranks) + " " + std::to_string(h.size) +
          " " + EncodeField(Cap(h.host, 255)) + " " + EncodeField(Cap(h.addr, 255)) +
         " " + EncodeField(Cap(h.nonce, 64)) + " " + (h.proof.empty() ? "-" : Cap(h.proof, 1024));
}

Result<Hello> DecodeHello(const std::string& text) {
  std::istringstream in(text);
  std::string magic, ranks, size, host, addr, nonce, proof;
  Hello h;
  if (!(in >> magic >> ranks >> size >> host >> addr >> nonce >> proof) || magic != kHelloMagic)
    return Error{"not an aml-shim preflight hello"};
  if (!DecodeField(nonce, &h.nonce)) return Error{"a hello with a badly encoded nonce"};
  h.proof = proof;
  if (!DecodeField(host, &h.host) || !DecodeField(addr, &h.addr))
    return Error{"a hello with a badly encoded host or address"};
  auto r = ParseRankRanges(ranks, 1 << 24, kMaxHelloRanks);
  auto s = ParseInt("size", size, 1, 1 << 24);
  if (!r.ok() || !s.ok()) return Error{"a hello with a bad rank or size"};
  h.ranks = std::move(*r);
  h.size = static_cast<int>(*s);
  return h;
}

std::string EncodeChallenge(const std::string& nonce, ProofKind kind) {
  return std::string(kHelloMagic) + " challenge " + nonce + " " + ProofKindName(kind);
}

Result<Challenge> DecodeChallenge(const std::string& text) {
  std::istringstream in(text);
  std::string magic, word;
  Challenge c;
  if (!(in >> magic >> word >> c.nonce >> c.kind) || magic != kHelloMagic || word != "challenge")
    return Error{"not an aml-shim preflight door (of this version)"};
  return c;
}

Result<std::string> HelloProof(const Prover& prover, const std::string& challenge,
                               const std::string& nonce, const std::vector<int>& ranks) {
  return prover.Make("preflight", ProofDirection::kUp, challenge, nonce, FormatRanges(ranks));
}

std::string EncodeGreeting() { return std::string(kHelloMagic) + " hi"; }

Status SayHelloTo(int fd, Hello h, const Prover& prover, Deadline deadline) {
  // A greeting at once, before the challenge can arrive: a door crowded
  // with strangers that say nothing never takes this seat first.
  Status greeted = SendFrame(fd, EncodeGreeting(), deadline);
  if (!greeted.ok()) return greeted;
  return AnswerChallenge(fd, std::move(h), prover, deadline);
}

Status AnswerChallenge(int fd, Hello h, const Prover& prover, Deadline deadline) {
  auto frame = RecvFrame(fd, 256, deadline);
  if (!frame.ok()) return frame.error();
  auto challenge = DecodeChallenge(*frame);
  if (!challenge.ok()) return challenge.error();
  const std::string mine = ProofKindName(prover.kind());
  if (challenge->kind != mine)
    return Error{"rank 0 asks for a proof of kind '" + EscapeControl(challenge->kind) +
                 "', this rank has '" + mine + "' (is AML_SHIM_JOB_SECRET, or munged, the "
                 "same on every node?)"};
  h.nonce = NewNonce();
  auto proof = HelloProof(prover, challenge->nonce, h.nonce, h.ranks);
  if (!proof.ok()) return proof.error();
  h.proof = *proof;
  return SendFrame(fd, EncodeHello(h), deadline);
}

HelloGate::HelloGate(int listen_fd, int size, Prover prover, GateLimits limits)
    : listen_fd_(listen_fd), size_(size), prover_(std::move(prover)), limits_(limits),
      who_(static_cast<size_t>(size)),
      hosts_(static_cast<size_t>(size)), conn_of_(static_cast<size_t>(size), -1) {
  fcntl(listen_fd_, F_SETFL, fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
}

void HelloGate::Accept(Deadline now) {
  for (size_t burst = 0; burst < kDoorAcceptBurst; ++burst) {
    int c = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      Pending p;
      p.fd = Fd(c);
      if (limits_.same_user_only && !PeerIsSameUser(c)) {
        ++other_user_;
        continue;
      }
      p.peer = PeerAddress(c);
      if (p.peer.empty()) p.peer = "?";
      p.until = now + limits_.hello_timeout;
      p.since = now;
      // A fresh challenge for each connection (a whole small frame: a new
      // socket's buffer takes it at once).
      p.challenge = NewNonce();
      const std::string challenge = EncodeChallenge(p.challenge, prover_.kind());
      const uint32_t len = htonl(static_cast<uint32_t>(challenge.size()));
      std::string out(reinterpret_cast<const char*>(&len), 4);
      out += challenge;
      if (send(c, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
          static_cast<ssize_t>(out.size())) {
        ++garbled_;
        continue;
      }
      // A shim's greeting is usually there already: read it before anyone
      // can take this seat.
      if (Read(p)) continue;
      if (pending_.size() >= limits_.max_pending) {
        std::vector<DoorSeat> seats;
        for (const Pending& q : pending_)
          seats.push_back(
              {q.sent + q.buf.size(),
               std::chrono::duration<double>(q.since.time_since_epoch()).count()});
        const size_t freed = SeatToFree(seats);
        crowd_.GaveUp(pending_[freed].sent + pending_[freed].buf.size());
        pending_.erase(pending_.begin() + static_cast<long>(freed));
      }
      pending_.push_back(std::move(p));
      continue;
    }
    if (errno == EMFILE || errno == ENFILE) {
      // Out of descriptors: a reason for the report, and a pause rather
      // than a loop that spins on the same error.
      ++fd_errors_;
      fd_error_ = std::string(std::strerror(errno)) + " (RLIMIT_NOFILE soft limit " +
                  std::to_string(FdLimit()) + ")";
      accept_after_ = now + kFdBackoff;
    }
    return;  // EAGAIN, or an error on one connection (ECONNABORTED)
  }
}

bool HelloGate::Read(Pending& p) {
  // Exactly the hello frame: the header, then its length, never more (the
  // GPU stage's frame may follow on the same connection). Read until the
  // socket has no more.
  for (;;) {
    const size_t want = p.buf.size() < 4 ? 4 : 4 + FrameLength(p.buf);
    char buf[1024];
    ssize_t n = recv(p.fd.get(), buf, std::min(sizeof buf, want - p.buf.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return false;
    if (n <= 0) {
      ++garbled_;
      return true;  // closed before a whole hello
    }
    p.buf.append(buf, static_cast<size_t>(n));
    if (p.buf.size() < 4) continue;
    if (FrameLength(p.buf) > limits_.max_hello) {
      ++oversized_;
      return true;
    }
    if (p.buf.size() < 4 + FrameLength(p.buf)) continue;
    // The greeting comes first; then the hello.
    if (!p.greeted && p.buf.substr(4) == EncodeGreeting()) {
      p.greeted = true;
      p.sent += p.buf.size();
      p.buf.clear();
      continue;
    }
    break;
  }
  const uint32_t len = FrameLength(p.buf);
  auto h = DecodeHello(p.buf.substr(4, len));
  if (!h.ok()) {
    ++garbled_;
    return true;
  }
  if (!prover_.Check(h->proof, "preflight", ProofDirection::kUp, p.challenge, h->nonce,
                     FormatRanges(h->ranks))) {
    ++bad_token_;
    if (static_cast<int>(bad_token_from_.size()) < kMaxListed) bad_token_from_.push_back(p.peer);
    return true;
  }
  Admit(p, *h);
  return true;
}

void HelloGate::Admit(Pending& p, const Hello& h) {
  const std::string who = EscapeControl(Cap(h.host)) + " (" + EscapeControl(Cap(h.addr)) + ")";
  const int conn = static_cast<int>(conns_.size());
  conns_.push_back(std::move(p.fd));  // it hears the verdict, admitted or not
  for (int rank : h.ranks) {
    std::string problem;
    if (h.size != size_) {
      problem = " rank " + std::to_string(rank) + " on " + who + " says the job has " +
                std::to_string(h.size) + " ranks";
    } else if (rank >= size_) {
      problem = " rank " + std::to_string(rank) + " on " + who + " is past the job's size";
    } else if (conn_of_[static_cast<size_t>(rank)] >= 0) {
      problem = " rank " + std::to_string(rank) + " arrived twice (" +
                who_[static_cast<size_t>(rank)] + " and " + who + ")";
    } else {
      const size_t r = static_cast<size_t>(rank);
      who_[r] = who;
      hosts_[r] = EscapeControl(Cap(h.host));
      conn_of_[r] = conn;
      ++count_;
      continue;
    }
    if (++mismatches_ <= kMaxListed) mismatch_ += (mismatch_.empty() ? "" : ";") + problem;
  }
}

std::vector<bool> HelloGate::arrived() const {
  std::vector<bool> out;
  for (int c : conn_of_) out.push_back(c >= 0);
  return out;
}

Deadline HelloGate::NextWake(Deadline deadline) const {
  Deadline next = deadline;
  for (const Pending& p : pending_) next = std::min(next, p.until);
  if (Clock::now() < accept_after_) next = std::min(next, accept_after_);
  return next;
}

void HelloGate::Run(Deadline deadline, int want) {
  if (want < 0) want = size_;
  std::vector<pollfd> fds;
  while (count_ < want && Clock::now() < deadline) {
    fds.clear();
    const Deadline now = Clock::now();
    const bool listen = now >= accept_after_;
    fds.push_back({listen ? listen_fd_ : -1, POLLIN, 0});
    for (const Pending& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
    poll(fds.data(), fds.size(), PollTimeoutMs(NextWake(deadline)));
    const Deadline after = Clock::now();
    // Connections first: a hello that completes frees its slot.
    std::vector<Pending> keep;
    keep.reserve(pending_.size());
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      bool done = (fds[i + 1].revents != 0) && Read(p);
      if (!done && after >= p.until) {
        ++idle_;
        done = true;
      }
      if (!done) keep.push_back(std::move(p));
    }
    pending_ = std::move(keep);
    if (fds[0].revents & POLLIN) Accept(after);
  }
  if (mismatches_ > kMaxListed)
    mismatch_ += "; and " + std::to_string(mismatches_ - kMaxListed) + " more";
}

std::string HelloGate::FloodNote() const { return crowd_.Note(limits_.door); }

std::vector<std::string> HelloGate::Notes() const {
  std::vector<std::string> notes;
  if (std::string flood = FloodNote(); !flood.empty()) notes.push_back(flood);
  if (fd_errors_ > 0)
    notes.push_back("rank 0 ran out of file descriptors while accepting: " + fd_error_);
  if (bad_token_ > 0) {
    std::string from;
    for (const auto& f : bad_token_from_) from += (from.empty() ? "" : ", ") + f;
    if (bad_token_ > kMaxListed) from += ", ...";
    notes.push_back(std::to_string(bad_token_) +
                    " connection(s) without this job's token were refused (from " + from + ")");
  }
  if (other_user_ > 0)
    notes.push_back(std::to_string(other_user_) + " connection(s) from another user were refused");
  if (oversized_ + garbled_ + idle_ > 0)
    notes.push_back("ignored: " + std::to_string(oversized_) + " oversized hello(s), " +
                    std::to_string(garbled_) + " that were not hellos, " + std::to_string(idle_) +
                    " idle connection(s)");
  return notes;
}

}  // namespace aml
