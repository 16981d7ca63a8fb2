#include "shim/preflight/membership.h"

#include "shim/base/sha256.h"

namespace aml {

Result<Membership> MembershipToken(const EnvSnapshot& env, const std::string& rendezvous_secret) {
  if (const auto* secret = env.Find(kJobSecretVar)) {
    // Its value is never printed: only its length.
    if (secret->size() < kMinJobSecret)
      return Error{std::string(kJobSecretVar) + " has " + std::to_string(secret->size()) +
                   " characters: a secret needs at least " + std::to_string(kMinJobSecret) +
                   " (e.g. export " + kJobSecretVar +
                   "=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'))"};
    return Membership{SecretDigest("preflight", *secret), kJobSecretVar};
  }
  for (const char* name : {"OMPI_MCA_orte_precondition_transports", "PRTE_MCA_prte_precondition_transports"})
    if (env.HasNonEmpty(name)) return Membership{SecretDigest("preflight", *env.Find(name)), name};
  if (!rendezvous_secret.empty())
    return Membership{SecretDigest("preflight", rendezvous_secret),
                      "the MPI rendezvous's token (sent over MPI only)"};
  return Membership{};
}

}  // namespace aml
