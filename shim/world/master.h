// Who the master is (docs/world.md, "How the world is resolved"): from the command line,
// MASTER_ADDR/MASTER_PORT, AzureML's variables, Slurm's node list, or, when
// nothing names it on a multi-node job, found by the MPI rendezvous.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/world/world.h"

namespace aml {

// --rendezvous: may (auto), must not (env) or must (mpi) the MPI rendezvous run.
enum class RendezvousMode { kAuto, kEnv, kMpi };

struct MasterRequest {
  std::optional<std::string> addr;  // --master-addr
  std::optional<int> port;          // --master-port
  RendezvousMode rendezvous = RendezvousMode::kAuto;
};

// The master is known without talking to anyone.
struct MasterKnown {
  Sourced<std::string> addr;
  Sourced<int> port;
};

// The MPI rendezvous must run: it finds what is not given (an address every
// rank reached, a free port on rank 0), verifies what is, and gives the exact
// node of every rank.
struct MasterByRendezvous {
  std::optional<Sourced<std::string>> addr;
  std::optional<Sourced<int>> port;
};

using MasterPlan = std::variant<MasterKnown, MasterByRendezvous>;

// Errors when a variable is malformed, or when nothing names the master of a
// multi-node job and --rendezvous env forbids MPI.
Result<MasterPlan> ResolveMaster(const EnvSnapshot& env, const MasterRequest& req,
                                 const World& world);

// The world with a known master filled in.
World WithMaster(World world, const MasterKnown& master);

}  // namespace aml
