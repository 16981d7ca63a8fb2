#include "shim/world/source_util.h"

#include "shim/base/parse_int.h"

namespace aml {

Result<std::optional<Sourced<int>>> ReadIntVar(const EnvSnapshot& env,
                                               const char* name, int min,
                                               int max) {
  const std::string* v = env.Find(name);
  if (!v) return std::optional<Sourced<int>>();
  auto n = ParseInt(name, *v, min, max);
  if (!n.ok()) return n.error();
  return std::optional<Sourced<int>>(
      Sourced<int>{static_cast<int>(*n), std::string(name) + "=" + *v});
}

Status CheckConsistent(const SourceWorld& w) {
  if (w.rank && w.size && w.rank->value >= w.size->value)
    return Error{w.rank->why + " is not below " + w.size->why};
  if (w.local_rank && w.local_size && w.local_rank->value >= w.local_size->value)
    return Error{w.local_rank->why + " is not below " + w.local_size->why};
  if (w.local_size && w.size && w.local_size->value > w.size->value)
    return Error{w.local_size->why + " is larger than " + w.size->why};
  if (w.node_rank && w.node_count && w.node_rank->value >= w.node_count->value)
    return Error{w.node_rank->why + " is not below " + w.node_count->why};
  return Ok{};
}

Result<std::optional<SourceWorld>> ReadQuartet(const EnvSnapshot& env,
                                               Launcher source,
                                               const QuartetNames& names) {
  if (!env.Has(names.rank)) return std::optional<SourceWorld>();
  SourceWorld w;
  w.source = source;
  struct Slot {
    const char* name;
    std::optional<Sourced<int>>* field;
    int min;
  } slots[] = {{names.rank, &w.rank, 0},
               {names.size, &w.size, 1},
               {names.local_rank, &w.local_rank, 0},
               {names.local_size, &w.local_size, 1}};
  for (const Slot& s : slots) {
    if (!s.name) continue;
    auto v = ReadIntVar(env, s.name, s.min, kMaxWorld);
    if (!v.ok()) return v.error();
    *s.field = *v;
  }
  if (!w.size)
    return Error{w.rank->why + " is set but " + names.size + " is not"};
  if (w.local_rank.has_value() != w.local_size.has_value() && names.local_size) {
    const char* missing = w.local_rank ? names.local_size : names.local_rank;
    return Error{std::string(missing) + " is not set although " +
                 w.rank->why + " is (" + LauncherName(source) + ")"};
  }
  auto ok = CheckConsistent(w);
  if (!ok.ok()) return ok.error();
  return std::optional<SourceWorld>(std::move(w));
}

}  // namespace aml
