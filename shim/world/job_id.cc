// The job's identity, for a master port that every rank derives alike.
#include "shim/world/sources.h"

#include "shim/base/proc_tree.h"

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
  // Hydra exports no job id. On one node every rank is a child of the same
  // hydra_pmi_proxy, and two jobs have two proxies: its pid tells jobs apart
  // and is the same for every rank. (Across nodes the proxies differ, so
  // only a single-node job, MPI_LOCALNRANKS = PMI_SIZE, uses it.)
  const std::string* local = env.Find("MPI_LOCALNRANKS");
  const std::string* size = env.Find("PMI_SIZE");
  if (local && size && *local == *size && env.Has("PMI_RANK")) {
    if (auto proxy = AncestorNamed("hydra_pmi_proxy"))
      return Sourced<std::string>{"hydra:" + std::to_string(*proxy),
                                  "Hydra's hydra_pmi_proxy (pid " + std::to_string(*proxy) +
                                      ") shared by this node's ranks"};
  }
  return std::nullopt;
}

}  // namespace aml
