// The job's identity, for a master port that every rank derives alike.
#include "shim/world/sources.h"

namespace aml {

std::optional<Sourced<std::string>> ReadJobId(const EnvSnapshot& env) {
  if (env.HasNonEmpty("SLURM_JOB_ID")) {
    std::string id = *env.Find("SLURM_JOB_ID");
    std::string why = "SLURM_JOB_ID=" + id;
    // Two steps of one job may run at once: tell them apart.
    if (env.HasNonEmpty("SLURM_STEP_ID")) {
      id += "." + *env.Find("SLURM_STEP_ID");
      why += ", SLURM_STEP_ID=" + *env.Find("SLURM_STEP_ID");
    }
    return Sourced<std::string>{id, why};
  }
  for (const char* name : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}) {
    if (env.HasNonEmpty(name))
      return Sourced<std::string>{*env.Find(name),
                                  std::string(name) + "=" + *env.Find(name)};
  }
  return std::nullopt;
}

}  // namespace aml
