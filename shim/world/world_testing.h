// For tests: a World with the given rank facts and a fixed master, each
// value's reason a short tag ("r", "s", "lr", ...).
#pragma once

#include "shim/world/world.h"

namespace aml {

inline World MakeTestWorld(int rank, int size, int lrank, int lsize, int node, int nodes) {
  World w;
  w.source = Launcher::kOpenMpi;
  w.rank = {rank, "r"};
  w.size = {size, "s"};
  w.local_rank = {lrank, "lr"};
  w.local_size = {lsize, "ls"};
  w.node_rank = {node, "n"};
  w.node_count = {nodes, "nc"};
  w.single_node = nodes == 1;
  w.master_addr = {"10.1.1.1", "a"};
  w.master_port = {1234, "p"};
  return w;
}

}  // namespace aml
