// The rendezvous (docs/world.md, "MPI rendezvous"): over a Collective (PMIx, else MPI), find the exact node of
// every process and a master address that every rank has verified it can
// reach: rank 0 listens, offers its addresses, each rank connects to each and
// checks the job's token, and the first address that every rank reached wins.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "shim/net/netif.h"
#include "shim/rendezvous/collective.h"
#include "shim/base/result.h"

namespace aml {

struct RendezvousRequest {
  std::string label = "MPI rendezvous";  // "PMIx rendezvous": what messages call it
  std::optional<std::string> master_addr;  // given: verify it, do not choose
  std::optional<int> master_port;          // given: listen there; else a free port
  int tf_ports = 0;  // free ports each process picks on its host (TF_CONFIG)
  std::string host;  // this process's host name, for reports
  std::chrono::milliseconds connect_timeout{5000};
  // Rank 0's candidate addresses; empty: CandidateAddresses(ListAddresses()).
  std::vector<std::string> candidates;
};

struct PeerInfo {
  std::string host;
  std::string addr;        // its address on the route to the master
  std::vector<int> ports;  // the tf_ports it picked
};

struct RendezvousResult {
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  int node_rank = 0, node_count = 1;
  std::string master_addr;
  int master_port = 0;
  std::string why;              // how the address was chosen
  std::vector<PeerInfo> peers;  // by rank, when tf_ports > 0
  // The job's random token, which only MPI carried (rank 0's listener
  // answers a digest of it): a secret the preflight's hellos can prove.
  std::string secret;
};

// Rank 0's addresses worth offering: up, not loopback, not link-local; IPv4
// before IPv6; each in the kernel's order.
std::vector<std::string> CandidateAddresses(const std::vector<NetAddr>& addrs);

// Node index of each rank from the lowest world rank on its node (its
// "leader"): nodes are numbered in the order of their leaders.
std::vector<int> NodeIndices(const std::vector<int>& leader_of_rank, int* node_count);

// Index of the first candidate whose bit is set in every mask, or -1.
int FirstReachedByAll(const std::vector<uint64_t>& masks, size_t candidates);

// Collective: every rank calls it; all get the same answer or the same error.
Result<RendezvousResult> RunRendezvous(Collective& c, const RendezvousRequest& req);

}  // namespace aml
