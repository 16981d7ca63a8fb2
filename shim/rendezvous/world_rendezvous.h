// Settles the world with the launcher's runtime (docs/world.md, "How the world is
// resolved"):
//   - where a PMIx server is offered (Open MPI 4 and 5, prterun, srun
//     --mpi=pmix), AskPmix reads the exact node of every rank and rank 0's
//     host from it, and keeps the client open for the exchanges below;
//   - SettleWorld decides whether the rendezvous runs, runs it over PMIx
//     (else over the launcher's MPI library, as under MPICH's Hydra), and
//     replaces the node, local and master facts with the exact ones;
//   - ShareJobToken gives every rank rank 0's random token over PMIx: the
//     preflight's job secret where the launcher exports none.
// MPI is finalised inside SettleWorld, PMIx when the caller drops the
// client: before the command is exec'd or fanned out.
#pragma once

#include <memory>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/rendezvous/pmix_collective.h"
#include "shim/rendezvous/rendezvous.h"
#include "shim/world/master.h"
#include "shim/world/world.h"

namespace aml {

// --tf-config on a multi-node job needs every rank's address and a free port
// on each host, which only the rendezvous gathers: a known master becomes a
// rendezvous that verifies it. Errors when that cannot be had.
Result<MasterPlan> RequireRendezvousForTfConfig(bool tf_config, RendezvousMode mode,
                                                const World& world, MasterPlan plan);

// PMIx, when `needed`, a server is offered and the world has more than one
// rank: the world made exact (local ranks, NODE_RANK, node count, rank 0's
// host), and the open client. nullptr (and the world as it was) when not
// needed, no server is offered, AML_SHIM_PMIX=0, or libpmix cannot be loaded or connected and
// AML_SHIM_LIBPMIX is unset (said with -v); an error when PMIx contradicts
// the launcher's variables, AML_SHIM_LIBPMIX cannot be used, or AML_SHIM_PMIX
// is neither 0 nor 1.
Result<std::unique_ptr<PmixCollective>> AskPmix(const EnvSnapshot& env, World* world,
                                                bool needed);

// The world with its master: as known, or from the rendezvous (over `pmix`
// when open, else MPI). `tf_ports`: ports each shim picks for its children's
// TF_CONFIG (0: none). `peers` gets each shim's address and ports when
// tf_ports > 0; `secret` the rendezvous's token ("" when it did not run) and
// what carried it.
Result<World> SettleWorld(const EnvSnapshot& env, const std::string& host, int tf_ports,
                          World world, const MasterPlan& plan, PmixCollective* pmix,
                          std::vector<PeerInfo>* peers, Sourced<std::string>* secret);

// Rank 0's fresh random token, to every rank (one PMIx fence).
Result<std::string> ShareJobToken(Collective& c);

}  // namespace aml
