// Kubeflow's training pods (docs/world.md, "Kubeflow"): one pod per node,
// which torchrun (or aml-shim) fans out. Kubeflow Trainer's TrainJob and
// PyTorchJob (training-operator 1.7 and later) give each pod the torchrun
// defaults PET_NNODES, PET_NODE_RANK and PET_NPROC_PER_NODE; TrainJob also
// PET_MASTER_ADDR and PET_MASTER_PORT, PyTorchJob MASTER_ADDR and
// MASTER_PORT. PyTorchJob's own RANK is the pod's index, and its WORLD_SIZE
// the pods (before 1.7) or the pods times nprocPerNode (1.7 and later):
// never read as a process's rank or world here.
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {

SourceResult ReadKubeflow(const EnvSnapshot& env) {
  const std::string* nnodes = env.Find("PET_NNODES");
  const std::string* node = env.Find("PET_NODE_RANK");
  if (!nnodes || !node) return std::optional<SourceWorld>();
  if (nnodes->find(':') != std::string::npos)
    return Error{"PET_NNODES='" + *nnodes + "' is an elastic range (PyTorchJob's elasticPolicy); "
                 "aml-shim needs a fixed node count: run torchrun with its c10d rendezvous there, "
                 "or give the job a fixed number of nodes"};
  auto n = ReadIntVar(env, "PET_NNODES", 1, kMaxWorld);
  if (!n.ok()) return n.error();
  auto r = ReadIntVar(env, "PET_NODE_RANK", 0, kMaxWorld);
  if (!r.ok()) return r.error();
  SourceWorld w;
  w.source = Launcher::kKubeflow;
  w.rank = **r;
  w.rank->why += " (this pod: one shim per node)";
  w.size = **n;
  w.local_rank = Sourced<int>{0, "one shim per pod (" + w.size->why + ")"};
  w.local_size = Sourced<int>{1, w.local_rank->why};
  w.node_rank = **r;
  w.node_count = **n;
  auto ok = CheckConsistent(w);
  if (!ok.ok()) return ok.error();
  return std::optional<SourceWorld>(std::move(w));
}

}  // namespace aml
