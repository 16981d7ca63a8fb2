// Open MPI 4 (orted) and 5 (prted) both export OMPI_COMM_WORLD_*.
// OMPI_COMM_WORLD_NODE_RANK is the rank among processes of this job on the
// node, NOT the node index, so it is deliberately not read here. Open MPI 4's
// OMPI_MCA_orte_num_nodes is the job's node count, the same on every rank.
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {

SourceResult ReadOpenMpi(const EnvSnapshot& env) {
  auto w = ReadQuartet(env, Launcher::kOpenMpi,
                       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"});
  if (!w.ok() || !*w) return w;
  auto nodes = ReadIntVar(env, "OMPI_MCA_orte_num_nodes", 1, kMaxWorld);
  if (!nodes.ok()) return nodes.error();
  (*w)->node_count = *nodes;
  return w;
}

}  // namespace aml
