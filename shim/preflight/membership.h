// Proof of membership for the preflight's hello (README.md, "TCP preflight:
// limits and strangers"): a digest of a value the launcher gives only to this job's
// processes, which a stranger on the network does not have. Open MPI's
// OMPI_MCA_orte_precondition_transports (random per job) is one; Slurm, Hydra
// and a plain environment give none, and then no proof is asked for.
#pragma once

#include <string>

#include "shim/base/env_snapshot.h"

namespace aml {

struct Membership {
  std::string token;  // "" when the launcher gives nothing secret
  std::string why;    // the variable it comes from
};

Membership MembershipToken(const EnvSnapshot& env);

}  // namespace aml
