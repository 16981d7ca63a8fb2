// Helpers shared by the world sources: read a bounded integer variable, and
// read the quartet (rank, size, local rank, local size) that every MPI
// launcher exports under its own names.
#pragma once

#include <optional>
#include <string>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/world/world.h"

namespace aml {

constexpr int kMaxWorld = 1 << 24;

// Unset → nullopt; set but not an integer in [min, max] → error.
Result<std::optional<Sourced<int>>> ReadIntVar(const EnvSnapshot& env,
                                               const char* name, int min,
                                               int max);

struct QuartetNames {
  const char* rank;
  const char* size;
  const char* local_rank;   // may be nullptr
  const char* local_size;   // may be nullptr
};

// Reads a quartet. Absent when the rank variable is unset; an error when the
// rank is set without the size, or when values are inconsistent
// (rank >= size, local rank >= local size, local size > size).
Result<std::optional<SourceWorld>> ReadQuartet(const EnvSnapshot& env,
                                               Launcher source,
                                               const QuartetNames& names);

// Checks rank < size and local rank < local size <= size on a partial world.
Status CheckConsistent(const SourceWorld& w);

}  // namespace aml
