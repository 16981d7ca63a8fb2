// Applies the MPI rendezvous to a resolved world: decides whether it runs
// (README.md, "How the world is resolved"), runs it over the launcher's MPI library,
// and replaces the node, local and master facts with the exact ones. MPI is
// finalised before this returns, so the command may be exec'd or fanned out
// right after.
#pragma once

#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/rendezvous/rendezvous.h"
#include "shim/world/master.h"
#include "shim/world/world.h"

namespace aml {

// --tf-config on a multi-node job needs every rank's address and a free port
// on each host, which only the MPI rendezvous gathers: a known master becomes
// a rendezvous that verifies it. Errors when that cannot be had.
Result<MasterPlan> RequireRendezvousForTfConfig(bool tf_config, RendezvousMode mode,
                                                const World& world, MasterPlan plan);

// The world with its master: as known, or from the MPI rendezvous.
// `tf_ports`: ports each shim picks for its children's TF_CONFIG (0: none).
// `peers` gets each shim's address and ports when tf_ports > 0; `secret` the
// rendezvous's token ("" when it did not run).
Result<World> SettleWorld(const EnvSnapshot& env, const std::string& host, int tf_ports,
                          World world, const MasterPlan& plan, std::vector<PeerInfo>* peers,
                          std::string* secret);

}  // namespace aml
