#include "shim/world/spare_world.h"

#include <string>

namespace aml {

Status CheckSpares(const World& world, int spares) {
  if (spares <= 0) return Ok();
  const std::string k = "--spares " + std::to_string(spares);
  if (world.size.value <= spares)
    return Error{k + " leaves no node to run ranks: the launcher started " +
                 std::to_string(world.size.value) + " shim(s) (" + world.size.why + ")"};
  if (world.local_size.value != 1)
    return Error{k + " needs one shim per node (a spare is a whole node): this node runs " +
                 std::to_string(world.local_size.value) + " (" + world.local_size.why +
                 "); start one task per node (mpirun --map-by ppr:1:node, srun "
                 "--ntasks-per-node 1) and give each --nproc-per-node"};
  return Ok();
}

World HolderWorld(const World& world, int spares, int node) {
  World w = world;
  if (spares <= 0) return w;
  const int nodes = world.size.value - spares;
  const std::string why = "--spares " + std::to_string(spares) + ": ";
  w.rank = {node, why + "the NODE_RANK this shim holds"};
  w.size = {nodes, why + "the launcher's " + std::to_string(world.size.value) +
                       " shims less the spares (" + world.size.why + ")"};
  w.node_rank = {node, why + "the NODE_RANK this shim holds (the first " +
                           std::to_string(nodes) + " shims hold 0-" + std::to_string(nodes - 1) +
                           "; a spare takes a retired one's)"};
  w.node_count = {nodes, w.size.why};
  w.local_rank = {0, why + "one shim per node"};
  w.local_size = {1, why + "one shim per node"};
  w.node_rank_exact = true;
  if (nodes > 1) w.single_node = false;
  return w;
}

}  // namespace aml
