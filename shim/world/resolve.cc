#include "shim/world/resolve.h"

#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {
namespace {

bool SameJob(const SourceWorld& a, const SourceWorld& b) {
  if (a.rank && b.rank && a.rank->value != b.rank->value) return false;
  if (a.size && b.size && a.size->value != b.size->value) return false;
  return true;
}

std::string Describe(const SourceWorld& w) {
  std::string s;
  for (const auto* f : {&w.rank, &w.size, &w.local_rank, &w.local_size}) {
    if (!*f) continue;
    s += (s.empty() ? "" : ", ") + (*f)->why;
  }
  return s;
}

template <class T>
void Fill(std::optional<T>& into, const std::optional<T>& from) {
  if (!into && from) into = from;
}

// NODE_RANK from facts every rank of the job shares, so that every rank
// takes the same decision: exact, or not provable (then the MPI rendezvous
// computes it, or the job stops; docs/world.md, "How the world is resolved").
// A rank's own local size is not such a fact: with 3 ranks on one node and 1
// on another, the lone rank would think "one process per node".
// Both name this node's index (torch's --node_rank, torchrun's agent); the
// children get both, so two values would be one silently replaced.
Status NodeIndexVarsAgree(const EnvSnapshot& env) {
  auto node = ReadIntVar(env, "NODE_RANK", 0, kMaxWorld - 1);
  auto group = ReadIntVar(env, "GROUP_RANK", 0, kMaxWorld - 1);
  if (!node.ok()) return node.error();
  if (!group.ok()) return group.error();
  if (*node && *group && (*node)->value != (*group)->value)
    return Error{"NODE_RANK='" + std::to_string((*node)->value) + "' and GROUP_RANK='" +
                 std::to_string((*group)->value) +
                 "' disagree: both are this node's index; unset one, or set them alike"};
  return Ok{};
}

Status ResolveNodeRank(const EnvSnapshot& env, const SourceWorld& merged, World& world) {
  world.node_rank_exact = true;
  if (merged.node_rank) {
    world.node_rank = *merged.node_rank;
    world.node_count = merged.node_count ? *merged.node_count
                                         : Sourced<int>{world.node_rank.value + 1,
                                                        "at least " + merged.node_rank->why};
    return Ok{};
  }
  // NODE_RANK you set (with a launcher that gives none) is taken as is.
  auto mine = ReadIntVar(env, "NODE_RANK", 0, kMaxWorld - 1);
  if (!mine.ok()) return mine.error();
  if (*mine) {
    world.node_rank = {(*mine)->value, (*mine)->why + " (set by you)"};
    world.node_count = merged.node_count ? *merged.node_count
                                         : Sourced<int>{world.node_rank.value + 1,
                                                        "at least " + world.node_rank.why};
    return Ok{};
  }
  if (world.local_size.value == world.size.value) {
    std::string why = world.local_size.why + " equals " + world.size.why + ": one node";
    world.node_rank = {0, why};
    world.node_count = {1, why};
    return Ok{};
  }
  if (merged.node_count && merged.node_count->value == world.size.value) {
    std::string why = "one process per node (" + merged.node_count->why + " = " +
                      world.size.why + ")";
    world.node_rank = {world.rank.value, why + ": node index = " + world.rank.why};
    world.node_count = {world.size.value, why};
    return Ok{};
  }
  // A torch environment without LOCAL_RANK: torch's own convention (one
  // process per node, as a Kubernetes PyTorchJob pod) holds job-wide.
  if (merged.source == Launcher::kTorch && !merged.local_rank) {
    world.node_rank = {world.rank.value, world.local_rank.why + ": node index = " + world.rank.why};
    world.node_count = {world.size.value, world.local_rank.why};
    return Ok{};
  }
  // Not provable: how ranks are placed (packed, round robin, uneven) is not
  // in the variables. A guess, marked so, for --explain only.
  world.node_rank_exact = false;
  const int l = world.local_size.value;
  world.node_rank = {world.rank.value / l,
                     "not provable from " + std::string(LauncherName(merged.source)) +
                         "'s variables (" + world.local_size.why + " of " + world.size.why +
                         ": placement unknown); " + std::to_string(world.rank.value / l) +
                         " only if ranks are packed " + std::to_string(l) + " per node"};
  world.node_count = merged.node_count
                         ? *merged.node_count
                         : Sourced<int>{(world.size.value + l - 1) / l, world.node_rank.why};
  return Ok{};
}

}  // namespace

Result<World> ResolveRanks(const EnvSnapshot& env) {
  if (Status agree = NodeIndexVarsAgree(env); !agree.ok()) return agree.error();
  // Innermost launcher first.
  SourceResult (*const readers[])(const EnvSnapshot&) = {
      ReadOpenMpi, ReadHydra, ReadMvapich, ReadPmix, ReadSlurm, ReadKubeflow, ReadTorchEnv};
  std::vector<SourceWorld> found;
  for (auto* read : readers) {
    auto r = read(env);
    if (!r.ok()) return r.error();
    if (*r) found.push_back(std::move(**r));
  }

  World world;
  if (found.empty()) {
    world.source = Launcher::kSingleton;
    world.rank = {0, "no launcher variables: a world of one"};
    world.size = {1, world.rank.why};
    world.local_rank = {0, world.rank.why};
    world.local_size = {1, world.rank.why};
    world.node_rank = {0, world.rank.why};
    world.node_count = {1, world.rank.why};
    return world;
  }

  SourceWorld merged = found[0];
  world.source = merged.source;
  world.notes.push_back("rank from " + std::string(LauncherName(merged.source)) + ": " + Describe(merged));
  for (size_t i = 1; i < found.size(); ++i) {
    const SourceWorld& lower = found[i];
    if (SameJob(merged, lower)) {
      Fill(merged.size, lower.size);
      Fill(merged.local_rank, lower.local_rank);
      Fill(merged.local_size, lower.local_size);
      Fill(merged.node_rank, lower.node_rank);
      Fill(merged.node_count, lower.node_count);
      Fill(merged.hosts, lower.hosts);
      world.notes.push_back(std::string(LauncherName(lower.source)) + " agrees: " + Describe(lower));
      continue;
    }
    const std::string lower_name = LauncherName(lower.source);
    const std::string merged_name = LauncherName(merged.source);
    if (merged.source == Launcher::kKubeflow && lower.source == Launcher::kTorch) {
      // PyTorchJob's own RANK (the pod) and WORLD_SIZE (pods, or pods times
      // nprocPerNode since training-operator 1.7): the pod's, not a rank's.
      world.notes.push_back("PyTorchJob's " + Describe(lower) + " describe the pods (their "
                            "meaning changed with training-operator 1.7); the world is " +
                            merged_name + "'s PET_* variables");
      continue;
    }
    std::string msg = lower_name + " variables (" + Describe(lower) + ") disagree with " +
                      merged_name + " (" + Describe(merged) + "); using " + merged_name + "'s";
    if (lower.source == Launcher::kTorch) {
      // A user-visible preset that will be overwritten: say so loudly.
      world.warnings.push_back(msg);
    } else {
      // An outer launcher's step (e.g. the srun that started mpirun's
      // daemons): expected, and only worth a note.
      world.notes.push_back(msg + " (an outer launcher's step)");
    }
  }
  if (!merged.size)
    return Error{merged.rank->why +
                 " is set but no variable gives the world size (" +
                 std::string(LauncherName(merged.source)) + " does not export it; run under a launcher "
                 "that does, or set WORLD_SIZE)"};
  // Fields filled from an agreeing lower source must still fit together.
  auto ok = CheckConsistent(merged);
  if (!ok.ok()) return ok.error();

  world.rank = *merged.rank;
  world.size = *merged.size;
  const std::string& one = world.size.why;
  if (merged.local_rank && merged.local_size) {
    world.local_rank = *merged.local_rank;
    world.local_size = *merged.local_size;
  } else if (world.size.value == 1) {
    world.local_rank = {0, one};
    world.local_size = {1, one};
  } else if (merged.local_rank) {
    world.local_rank = *merged.local_rank;
    world.local_size = {world.local_rank.value + 1,
                        "at least " + merged.local_rank->why +
                            " + 1 (no local size variable)"};
  } else {
    world.local_rank = {0, "assumed: one process per node (" + std::string(LauncherName(merged.source)) +
                               " gives no local rank)"};
    world.local_size = {1, world.local_rank.why};
  }

  auto node = ResolveNodeRank(env, merged, world);
  if (!node.ok()) return node.error();
  world.single_node = world.node_count.value == 1;
  world.hosts = merged.hosts;
  return world;
}

}  // namespace aml
