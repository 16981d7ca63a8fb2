// MVAPICH2 (mpirun_rsh and Hydra builds).
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {

SourceResult ReadMvapich(const EnvSnapshot& env) {
  return ReadQuartet(env, Launcher::kMvapich,
                     {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
                      "MV2_COMM_WORLD_LOCAL_RANK",
                      "MV2_COMM_WORLD_LOCAL_SIZE"});
}

}  // namespace aml
