// A torch environment that is already set (Kubernetes PyTorchJob, a batch
// script, an outer launcher): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// NODE_RANK (or GROUP_RANK), and GROUP_WORLD_SIZE (the node count torchrun
// exports, which every rank shares).
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {

SourceResult ReadTorchEnv(const EnvSnapshot& env) {
  // LOCAL_RANK without LOCAL_WORLD_SIZE is common in older scripts, so the
  // local size is read on its own rather than as part of the quartet.
  auto w = ReadQuartet(env, Launcher::kTorch,
                       {"RANK", "WORLD_SIZE", "LOCAL_RANK", nullptr});
  if (!w.ok() || !*w) return w;
  SourceWorld& sw = **w;
  auto local_size = ReadIntVar(env, "LOCAL_WORLD_SIZE", 1, kMaxWorld);
  if (!local_size.ok()) return local_size.error();
  sw.local_size = *local_size;
  for (const char* name : {"NODE_RANK", "GROUP_RANK"}) {
    auto node = ReadIntVar(env, name, 0, kMaxWorld);
    if (!node.ok()) return node.error();
    if (*node) {
      sw.node_rank = **node;
      break;
    }
  }
  auto nodes = ReadIntVar(env, "GROUP_WORLD_SIZE", 1, kMaxWorld);
  if (!nodes.ok()) return nodes.error();
  if (*nodes) sw.node_count = **nodes;
  auto ok = CheckConsistent(sw);
  if (!ok.ok()) return ok.error();
  return w;
}

}  // namespace aml
