// Proof of membership for the preflight's hello (README.md, "TCP preflight:
// limits and strangers"): a digest of a secret that only this job's
// processes have, which a stranger on the network does not. In order:
//   AML_SHIM_JOB_SECRET, which you export in the job script (srun and
//     mpirun pass it to every rank);
//   Open MPI's OMPI_MCA_orte_precondition_transports (PRRTE's twin), random
//     per job;
//   the token the MPI rendezvous broadcast over MPI (its listener answers
//     only a digest of it).
// Otherwise (Slurm or Hydra without the rendezvous, a plain environment) no
// proof is asked for.
#pragma once

#include <string>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

struct Membership {
  std::string token;  // "" when there is no secret
  std::string why;    // where the secret comes from
};

inline constexpr char kJobSecretVar[] = "AML_SHIM_JOB_SECRET";
inline constexpr size_t kMinJobSecret = 16;

// `rendezvous_secret`: the MPI rendezvous's token, "" when it did not run.
// Errors on an AML_SHIM_JOB_SECRET too short to be a secret.
Result<Membership> MembershipToken(const EnvSnapshot& env, const std::string& rendezvous_secret);

}  // namespace aml
