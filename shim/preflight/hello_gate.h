// Rank 0's door for the TCP preflight (docs/preflight.md, "TCP preflight: limits and
// strangers"): one
// poll loop over the listener and every connection that has not yet said
// hello, all non-blocking. A hello speaks for one rank, or for every rank of
// a node that its local rank 0 gathered (node_fan_in.h). Each connection has
// its own deadline and a small cap on its hello; connections that have not
// said hello are capped too, and past the cap a newcomer takes the seat of
// the one that has sent least (shim/net/crowded_door.h). The door sends each
// connection a challenge as it accepts it, and a hello must answer it with a
// proof under the job's token when there is one (shim/base/proof.h), so a
// stranger cannot pass as a rank, not even with a hello it saw on the
// network; nothing a peer
// sends can stall, bloat or outwait the real ranks, and what is reported
// about strangers is a few counted lines.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "shim/base/proof.h"
#include "shim/base/result.h"
#include "shim/net/crowded_door.h"
#include "shim/net/tcp.h"

namespace aml {

inline constexpr char kHelloMagic[] = "aml-shim-preflight-3";

// Ranks one hello may speak for (a node's).
inline constexpr size_t kMaxHelloRanks = 2048;

struct Hello {
  std::vector<int> ranks;  // sorted; one, or a node's
  int size = -1;
  std::string host, addr;
  std::string nonce;  // the sender's
  std::string proof;  // HelloProof: "-" without a proof
};

// "MAGIC RANKS SIZE HOST ADDR NONCE PROOF": RANKS as "3" or "0-3,8"; fields
// capped.
std::string EncodeHello(const Hello& h);
Result<Hello> DecodeHello(const std::string& text);

// What a rank sends at once, "MAGIC hi", before the challenge arrives.
std::string EncodeGreeting();

// The door's challenge, "MAGIC challenge NONCE KIND", sent as it accepts:
// its nonce and the kind of proof it asks for (shim/base/proof.h).
struct Challenge {
  std::string nonce, kind;
};
std::string EncodeChallenge(const std::string& nonce, ProofKind kind);
Result<Challenge> DecodeChallenge(const std::string& text);

// The hello's proof: the challenge and its nonce for the ranks it speaks
// for ("-" without a proof).
Result<std::string> HelloProof(const Prover& prover, const std::string& challenge,
                               const std::string& nonce, const std::vector<int>& ranks);

// Sends the greeting on `fd`, then AnswerChallenge: what a rank does.
Status SayHelloTo(int fd, Hello h, const Prover& prover, Deadline deadline);
// Reads the door's challenge on `fd` and sends `h` with its nonce and proof.
Status AnswerChallenge(int fd, Hello h, const Prover& prover, Deadline deadline);

struct GateLimits {
  size_t max_hello = 16 << 10;  // bytes of one hello (a node's rank list fits)
  size_t max_pending = 256;     // connections that have not said hello yet
  std::chrono::milliseconds hello_timeout{5000};  // from accept to hello
  bool same_user_only = false;  // a node-local socket: refuse other users
  std::string door = "MASTER_PORT";  // what the reports call the listener
};

class HelloGate {
 public:
  HelloGate(int listen_fd, int size, Prover prover, GateLimits limits = {});
  // Until every rank said hello (or `want` of them, when given), or `deadline`.
  void Run(Deadline deadline, int want = -1);
  // Closes the connections that have not said hello yet.
  void DropPending() { pending_.clear(); }

  int arrived_count() const { return count_; }
  std::vector<bool> arrived() const;
  const std::vector<std::string>& who() const { return who_; }      // "host (addr)"
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Every connection that said hello (each hears the verdict), and for each
  // rank the index of its connection (-1: did not arrive).
  const std::vector<Fd>& connections() const { return conns_; }
  const std::vector<int>& connection_of_rank() const { return conn_of_; }
  // Ranks that disagree with rank 0 (world size, two claims for one rank).
  const std::string& mismatch() const { return mismatch_; }
  // Strangers and trouble at the door, for a failed preflight's report.
  std::vector<std::string> Notes() const;
  // Seats given up to a flood (see Notes), worth a warning even when every
  // rank got in; empty if none.
  std::string FloodNote() const;

 private:
  struct Pending {
    Fd fd;
    std::string challenge;  // the nonce sent to it
    bool greeted = false;   // its greeting (EncodeGreeting) was read
    size_t sent = 0;        // bytes of frames read before buf
    std::string buf;
    std::string peer;
    Deadline until;
    Deadline since;
  };
  void Accept(Deadline now);
  bool Read(Pending& p);  // true when done with it
  void Admit(Pending& p, const Hello& h);
  Deadline NextWake(Deadline deadline) const;

  int listen_fd_;
  int size_;
  Prover prover_;
  GateLimits limits_;
  std::vector<Pending> pending_;
  std::vector<std::string> who_, hosts_;
  std::vector<Fd> conns_;
  std::vector<int> conn_of_;
  int count_ = 0;
  std::string mismatch_;
  int mismatches_ = 0;
  int bad_token_ = 0, oversized_ = 0, garbled_ = 0, idle_ = 0, other_user_ = 0;
  DoorCrowd crowd_;
  std::vector<std::string> bad_token_from_;
  int fd_errors_ = 0;
  std::string fd_error_;
  Deadline accept_after_{};
};

}  // namespace aml
