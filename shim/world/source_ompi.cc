// Open MPI 4 (orted) and 5 (prted) both export OMPI_COMM_WORLD_*.
// OMPI_COMM_WORLD_NODE_RANK is the rank among processes of this job on the
// node, NOT the node index, so it is deliberately not read here.
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {

SourceResult ReadOpenMpi(const EnvSnapshot& env) {
  return ReadQuartet(env, Launcher::kOpenMpi,
                     {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK",
                      "OMPI_COMM_WORLD_LOCAL_SIZE"});
}

}  // namespace aml
