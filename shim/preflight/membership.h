// Proof of membership for the preflight's hello (docs/preflight.md, "TCP preflight:
// limits and strangers"): a digest of a secret that only this job's
// processes have, which a stranger on the network does not. In order:
//   AML_SHIM_JOB_SECRET, which you export in the job script (srun and
//     mpirun pass it to every rank);
//   Open MPI 4's OMPI_MCA_orte_precondition_transports, random per job
//     (Open MPI 5 exports none);
//   a token rank 0 gave every rank over the launcher's runtime: the PMIx
//     exchange's, or the MPI rendezvous's (its listener answers only a digest
//     of it).
// Otherwise (Hydra without the rendezvous, Slurm without PMIx, a plain
// environment) a MUNGE credential is the proof where munged answers
// (shim/base/munge.h); else no proof is asked for, and `why` says what that
// allows.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "shim/base/env_snapshot.h"
#include "shim/base/proof.h"
#include "shim/base/result.h"

namespace aml {

struct Membership {
  Membership() = default;
  Membership(std::string t, std::string w, std::shared_ptr<const Munge> m = nullptr)
      : token(std::move(t)), why(std::move(w)), munge(std::move(m)) {}
  std::string token;  // "" when there is no secret
  std::string why;    // where the secret comes from, or why there is none
  std::shared_ptr<const Munge> munge;  // no token, and munged answers
  Prover prover() const { return Prover(token, munge); }
};

inline constexpr char kJobSecretVar[] = "AML_SHIM_JOB_SECRET";
inline constexpr size_t kMinJobSecret = 16;

// `shared`: the raw token rank 0 gave every rank, and how (token "" when
// none). Errors on an AML_SHIM_JOB_SECRET too short to be a secret.
Result<Membership> MembershipToken(const EnvSnapshot& env, const Membership& shared);

}  // namespace aml
