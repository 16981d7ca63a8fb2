// The launcher's PMIx runtime as the rendezvous's Collective, and what it
// says of the job (docs/world.md, "How the world is resolved"): every rank's
// node, so NODE_RANK is exact for any placement (nodes numbered by their
// lowest rank, as the MPI rendezvous numbers them), and rank 0's host.
// Exchanges are PMIx_Put + PMIx_Fence (collecting) + PMIx_Get under keys
// "aml-shim.N", never MPI_Init.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shim/pmix/client.h"
#include "shim/rendezvous/collective.h"

namespace aml {

struct PmixWorld {
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  int node_rank = 0, node_count = 1;
  std::string rank0_host;  // PMIX_HOSTNAME of rank 0
  std::string library;     // the libpmix that answered
};

// Node index of each rank, nodes numbered by their lowest rank, from a node
// id of each rank (any numbering).
std::vector<int> NodesByLowestRank(const std::vector<uint32_t>& node_id_of_rank, int* count);

class PmixCollective : public Collective {
 public:
  // Reads the job (size, local rank and peers), and every rank's node and
  // rank 0's host in one exchange.
  static Result<std::unique_ptr<PmixCollective>> Start(std::unique_ptr<PmixClient> client);
  const PmixWorld& world() const { return world_; }

  int rank() const override { return world_.rank; }
  int size() const override { return world_.size; }
  int local_rank() const override { return world_.local_rank; }
  int local_size() const override { return world_.local_size; }
  Result<std::string> AllgatherWorld(const std::string& mine) override;
  Result<std::string> AllgatherLocal(const std::string& mine) override;
  Result<std::string> Broadcast(const std::string& data) override;

 private:
  explicit PmixCollective(std::unique_ptr<PmixClient> client) : client_(std::move(client)) {}
  // Puts `mine` (if any) under a fresh key, fences, and reads `from`'s.
  Result<std::vector<std::string>> Exchange(const std::string* mine, const std::vector<int>& from);
  std::vector<int> AllRanks() const;  // 0 .. size-1
  // The same, concatenated.
  Result<std::string> Concat(const std::string* mine, const std::vector<int>& from);

  std::unique_ptr<PmixClient> client_;
  PmixWorld world_;
  std::vector<int> local_peers_;  // world ranks on this node, ascending
  int round_ = 0;
};

}  // namespace aml
