// PMIx launchers (srun --mpi=pmix, prterun) export PMIX_RANK. The world size
// is not in the environment under PMIx, so this source gives the rank only;
// resolution takes the size from another source that agrees on the rank.
#include "shim/world/source_util.h"
#include "shim/world/sources.h"

namespace aml {

SourceResult ReadPmix(const EnvSnapshot& env) {
  auto rank = ReadIntVar(env, "PMIX_RANK", 0, kMaxWorld);
  if (!rank.ok()) return rank.error();
  if (!*rank) return std::optional<SourceWorld>();
  SourceWorld w;
  w.source = Launcher::kPmix;
  w.rank = **rank;
  return std::optional<SourceWorld>(std::move(w));
}

}  // namespace aml
