#include "shim/base/proof.h"

#include <unistd.h>

#include "shim/base/hex.h"
#include "shim/base/random_token.h"
#include "shim/base/sha256.h"

namespace aml {

std::string NewNonce() { return RandomToken(); }

namespace {

std::string ProofMessage(const std::string& door, ProofDirection direction,
                         const std::string& server_nonce, const std::string& client_nonce,
                         const std::string& who) {
  return "aml-shim-proof:" + door + ":" + (direction == ProofDirection::kUp ? "up" : "down") +
         ":" + server_nonce + ":" + client_nonce + ":" + who;
}

}  // namespace

std::string ConnectionProof(const std::string& secret, const std::string& door,
                            ProofDirection direction, const std::string& server_nonce,
                            const std::string& client_nonce, const std::string& who) {
  if (secret.empty()) return "-";
  const auto mac =
      HmacSha256(secret, ProofMessage(door, direction, server_nonce, client_nonce, who));
  return Hex(mac.data(), mac.size());
}

const char* ProofKindName(ProofKind k) {
  switch (k) {
    case ProofKind::kSecret: return "secret";
    case ProofKind::kMunge: return "munge";
    case ProofKind::kNone: break;
  }
  return "none";
}

Prover::Prover(std::string secret, std::shared_ptr<const Munge> munge)
    : secret_(std::move(secret)), munge_(secret_.empty() ? std::move(munge) : nullptr) {}

ProofKind Prover::kind() const {
  return !secret_.empty() ? ProofKind::kSecret : munge_ ? ProofKind::kMunge : ProofKind::kNone;
}

Result<std::string> Prover::Make(const std::string& door, ProofDirection direction,
                                 const std::string& server_nonce,
                                 const std::string& client_nonce, const std::string& who) const {
  if (kind() != ProofKind::kMunge)
    return ConnectionProof(secret_, door, direction, server_nonce, client_nonce, who);
  return munge_->Encode(ProofMessage(door, direction, server_nonce, client_nonce, who));
}

bool Prover::Check(const std::string& proof, const std::string& door, ProofDirection direction,
                   const std::string& server_nonce, const std::string& client_nonce,
                   const std::string& who, std::string* why) const {
  std::string ignored;
  if (!why) why = &ignored;
  switch (kind()) {
    case ProofKind::kNone:
      return true;
    case ProofKind::kSecret:
      if (SameProof(proof, ConnectionProof(secret_, door, direction, server_nonce, client_nonce,
                                           who)))
        return true;
      *why = "without this job's proof";
      return false;
    case ProofKind::kMunge:
      break;
  }
  auto cred = munge_->Decode(proof);
  if (!cred.ok()) {
    *why = "without a MUNGE credential of this cluster (" + cred.error().message + ")";
    return false;
  }
  if (cred->uid != geteuid()) {
    *why = "a MUNGE credential of another user (uid " + std::to_string(cred->uid) + ")";
    return false;
  }
  if (cred->payload != ProofMessage(door, direction, server_nonce, client_nonce, who)) {
    *why = "a MUNGE credential made for another connection";
    return false;
  }
  return true;
}

bool SameProof(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace aml
