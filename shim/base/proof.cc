#include "shim/base/proof.h"

#include "shim/base/hex.h"
#include "shim/base/random_token.h"
#include "shim/base/sha256.h"

namespace aml {

std::string NewNonce() { return RandomToken(); }

std::string ConnectionProof(const std::string& secret, const std::string& door,
                            ProofDirection direction, const std::string& server_nonce,
                            const std::string& client_nonce, const std::string& who) {
  if (secret.empty()) return "-";
  const std::string message = "aml-shim-proof:" + door + ":" +
                              (direction == ProofDirection::kUp ? "up" : "down") + ":" +
                              server_nonce + ":" + client_nonce + ":" + who;
  const auto mac = HmacSha256(secret, message);
  return Hex(mac.data(), mac.size());
}

bool SameProof(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace aml
