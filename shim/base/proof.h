// Proof of membership bound to one connection (docs/control-plane.md,
// "Control plane"; docs/preflight.md, "TCP preflight: limits and
// strangers"): the listener sends a challenge (a fresh nonce) as it accepts;
// the connecting side answers with its own nonce and a keyed digest
// (HMAC-SHA256 under the job's secret) of both nonces, the door, the
// direction and the ranks it speaks for; the listener's answer carries the
// same digest for the other direction. Someone who sees a proof on the job's
// network learns nothing they can use: the next connection gets another
// challenge, so the same bytes are never valid twice, and a proof for one
// direction, door or rank is none for another.
//
// Where the job has no secret (Slurm without PMIx, Hydra, a plain
// environment) and munged answers, the proof is a MUNGE credential
// (shim/base/munge.h) of the same message: it says the same user on this
// cluster made it, for this connection, and munged refuses it a second time.
// The door's challenge says which kind it expects (ProofKind).
#pragma once

#include <memory>
#include <string>

#include "shim/base/munge.h"

namespace aml {

// A fresh nonce: 32 hex digits from the kernel.
std::string NewNonce();

enum class ProofDirection { kUp, kDown };  // from the connecting side, or to it

// Hex of HMAC-SHA256(secret, "aml-shim-proof:DOOR:up|down:SERVER_NONCE:CLIENT_NONCE:WHO").
// "-" when `secret` is empty (no job secret: nothing is proven).
std::string ConnectionProof(const std::string& secret, const std::string& door,
                            ProofDirection direction, const std::string& server_nonce,
                            const std::string& client_nonce, const std::string& who);

// Compares in time independent of where they differ.
bool SameProof(const std::string& a, const std::string& b);

enum class ProofKind { kNone, kSecret, kMunge };
const char* ProofKindName(ProofKind k);  // "none", "secret", "munge"

// Makes and checks one side's proofs: under the job's secret when there is
// one, else with MUNGE when given, else none ("-", and anything passes).
class Prover {
 public:
  Prover() = default;
  Prover(std::string secret, std::shared_ptr<const Munge> munge);
  ProofKind kind() const;
  // This side's proof for `direction`.
  Result<std::string> Make(const std::string& door, ProofDirection direction,
                           const std::string& server_nonce, const std::string& client_nonce,
                           const std::string& who) const;
  // The peer's proof for `direction`; false (with why) unless it proves the
  // same under this side's kind.
  bool Check(const std::string& proof, const std::string& door, ProofDirection direction,
             const std::string& server_nonce, const std::string& client_nonce,
             const std::string& who, std::string* why = nullptr) const;

 private:
  std::string secret_;
  std::shared_ptr<const Munge> munge_;
};

}  // namespace aml
