#include "shim/preflight/membership.h"

#include "shim/base/sha256.h"

namespace aml {

Result<Membership> MembershipToken(const EnvSnapshot& env, const Membership& shared) {
  if (const auto* secret = env.Find(kJobSecretVar)) {
    // Its value is never printed: only its length.
    if (secret->size() < kMinJobSecret)
      return Error{std::string(kJobSecretVar) + " has " + std::to_string(secret->size()) +
                   " characters: a secret needs at least " + std::to_string(kMinJobSecret) +
                   " (e.g. export " + kJobSecretVar +
                   "=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'))"};
    return Membership{SecretDigest("preflight", *secret), kJobSecretVar, nullptr};
  }
  const char* launcher = "OMPI_MCA_orte_precondition_transports";
  if (env.HasNonEmpty(launcher))
    return Membership{SecretDigest("preflight", *env.Find(launcher)), launcher, nullptr};
  if (!shared.token.empty()) return Membership{SecretDigest("preflight", shared.token), shared.why, nullptr};
  const std::string none = std::string("no job secret (no ") + kJobSecretVar +
                           ", none from the launcher, no PMIx)";
  auto munge = Munge::Open(env);
  if (munge.ok())
    return Membership{"", none + ": MUNGE credentials instead (munged: the same user of this "
                                 "cluster, never the same credential twice)",
                      std::move(*munge)};
  return Membership{"", none + " and no MUNGE (" + munge.error().message +
                            "): a process outside the job that reaches the master port before "
                            "a rank can take its place; export " + kJobSecretVar +
                            " to prevent it",
                    nullptr};
}

}  // namespace aml
