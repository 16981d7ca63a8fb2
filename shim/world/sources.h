// One function per source of world information. Each maps an environment
// snapshot to a partial world: nullopt when the source is absent, an error
// when its variables are present but malformed or inconsistent.
#pragma once

#include <optional>
#include <string>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/world/world.h"

namespace aml {

using SourceResult = Result<std::optional<SourceWorld>>;

SourceResult ReadOpenMpi(const EnvSnapshot& env);   // source_ompi.cc
SourceResult ReadHydra(const EnvSnapshot& env);     // source_hydra.cc
SourceResult ReadMvapich(const EnvSnapshot& env);   // source_mvapich.cc
SourceResult ReadPmix(const EnvSnapshot& env);      // source_pmix.cc
SourceResult ReadSlurm(const EnvSnapshot& env);     // source_slurm.cc
SourceResult ReadKubeflow(const EnvSnapshot& env);  // source_kubeflow.cc
SourceResult ReadTorchEnv(const EnvSnapshot& env);  // source_torch.cc

// The job's id for the derived port, with the variable it came from
// (SLURM_JOB_ID[.SLURM_STEP_ID], OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE).
std::optional<Sourced<std::string>> ReadJobId(const EnvSnapshot& env);  // job_id.cc

}  // namespace aml
