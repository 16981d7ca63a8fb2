// Applies MPI rendezvous to a resolved world: decides whether it runs
// (DESIGN.md §4), runs it over the launcher's MPI library, and replaces the
// node, local and master facts with the exact ones. MPI is finalised before
// this returns, so the command may be exec'd or fanned out right after.
#pragma once

#include <vector>

#include "shim/env_snapshot.h"
#include "shim/options.h"
#include "shim/rendezvous.h"
#include "shim/result.h"
#include "shim/world.h"

namespace aml {

// True for the sources whose launcher is an MPI (an MPI library can be
// initialised under it).
bool IsMpiSource(const std::string& source);

// Marks world.needs_rendezvous for --tf-config on a multi-node job (TF needs
// every rank's address), or errors when that cannot be had.
Status RequireRendezvousForTfConfig(const Options& options, World& world);

// Runs the rendezvous when world.needs_rendezvous. `tf_ports`: ports each
// shim picks for its children's TF_CONFIG (0: none). `peers` gets each shim's
// address and ports when tf_ports > 0.
Status RendezvousIfNeeded(const EnvSnapshot& env, const std::string& host, int tf_ports,
                          World& world, std::vector<PeerInfo>* peers);

}  // namespace aml
