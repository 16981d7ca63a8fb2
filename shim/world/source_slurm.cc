// Slurm step variables (srun). The step's own variables (SLURM_STEP_*) are
// preferred to the allocation's, which describe the whole job.
#include "shim/world/hostlist.h"
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

#include <string>

namespace aml {
namespace {

const char* FirstSet(const EnvSnapshot& env,
                     std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (env.HasNonEmpty(n)) return n;
  return nullptr;
}

}  // namespace

SourceResult ReadSlurm(const EnvSnapshot& env) {
  if (!env.Has("SLURM_PROCID")) return std::optional<SourceWorld>();
  const char* size_var = FirstSet(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  if (!size_var)
    return Error{"SLURM_PROCID='" + env.GetOr("SLURM_PROCID", "") +
                 "' is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is"};
  auto w = ReadQuartet(env, Launcher::kSlurm,
                       {"SLURM_PROCID", size_var, "SLURM_LOCALID", nullptr});
  if (!w.ok() || !*w) return w;
  SourceWorld& sw = **w;

  auto node = ReadIntVar(env, "SLURM_NODEID", 0, kMaxWorld);
  if (!node.ok()) return node.error();
  sw.node_rank = *node;
  const char* count_var =
      FirstSet(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  if (count_var) {
    auto count = ReadIntVar(env, count_var, 1, kMaxWorld);
    if (!count.ok()) return count.error();
    sw.node_count = *count;
  }
  if (const char* list = FirstSet(env, {"SLURM_STEP_NODELIST",
                                        "SLURM_JOB_NODELIST", "SLURM_NODELIST"})) {
    // A list and a count of the same scope (the step's, or the
    // allocation's) must agree; the count also bounds the expansion, so a
    // list of a million names is refused before it is built.
    const std::string c = count_var ? count_var : "", l = list;
    const bool paired = (c == "SLURM_STEP_NUM_NODES" && l == "SLURM_STEP_NODELIST") ||
                        (c == "SLURM_JOB_NUM_NODES" && l == "SLURM_JOB_NODELIST");
    const size_t cap = paired ? static_cast<size_t>(sw.node_count->value) : size_t{1} << 20;
    auto hosts = ExpandHostlist(list, *env.Find(list), cap);
    std::string shown = *env.Find(list);
    if (shown.size() > 100) shown = shown.substr(0, 100) + "...";
    if (!hosts.ok() && paired && hosts.error().message.find("expands to more than") != std::string::npos)
      return Error{std::string(list) + "='" + shown + "' names more than " + std::to_string(cap) +
                   " host(s), but " + count_var + "=" + std::to_string(cap)};
    if (!hosts.ok()) return hosts.error();
    if (paired && hosts->size() != cap)
      return Error{std::string(list) + "='" + shown + "' names " + std::to_string(hosts->size()) +
                   " host(s), but " + count_var + "=" + std::to_string(cap)};
    sw.hosts = Sourced<std::vector<std::string>>{
        *hosts, std::string(list) + "=" + *env.Find(list)};
    if (!sw.node_count)
      sw.node_count = Sourced<int>{static_cast<int>(hosts->size()),
                                   "hosts in " + std::string(list)};
  } else if (env.Has("SLURM_STEP_NODELIST") || env.Has("SLURM_JOB_NODELIST")) {
    return Error{"SLURM_STEP_NODELIST='' is an empty host list"};
  }
  // Uneven tasks per node: "3(x2),2" gives this node's count by node index.
  if (const char* tpn = FirstSet(env, {"SLURM_STEP_TASKS_PER_NODE",
                                       "SLURM_TASKS_PER_NODE"})) {
    auto counts = ExpandTasksPerNode(tpn, *env.Find(tpn));
    if (!counts.ok()) return counts.error();
    int node_index = sw.node_rank ? sw.node_rank->value : 0;
    if (node_index >= static_cast<int>(counts->size()))
      return Error{std::string(tpn) + "='" + *env.Find(tpn) + "' has no entry for " +
                   (sw.node_rank ? sw.node_rank->why : "node 0")};
    sw.local_size = Sourced<int>{(*counts)[node_index],
                                 std::string(tpn) + "=" + *env.Find(tpn) +
                                     " at node " + std::to_string(node_index)};
  }
  auto ok = CheckConsistent(sw);
  if (!ok.ok()) return ok.error();
  return w;
}

}  // namespace aml
