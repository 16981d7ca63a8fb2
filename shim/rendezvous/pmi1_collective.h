// The rendezvous's Collective over Hydra's PMI-1 wire protocol (MPICH,
// Intel MPI): the text commands ("cmd=put kvsname=K key=k value=v") that
// MPICH's own MPI_Init sends on PMI_FD, the descriptor hydra_pmi_proxy gave
// each rank. No MPI_Init, and the descriptor is left open and as it was: the
// command, exec'd, sends its own "cmd=init" on it and finds only keys named
// aml-shim.* besides its own. Each rank's node comes from the launcher's
// PMI_process_mapping (as MPICH computes MPI_COMM_TYPE_SHARED).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/rendezvous/collective.h"

namespace aml {

// Hydra offers PMI-1 on a descriptor: PMI_FD, PMI_RANK and PMI_SIZE are set.
bool Pmi1Offered(const EnvSnapshot& env);

// The node index of each of `size` ranks from PMI_process_mapping, e.g.
// "(vector,(0,2,2))": blocks of (first node, nodes, ranks per node),
// repeated until every rank has a node, as MPICH reads it.
Result<std::vector<int>> ParseProcessMapping(const std::string& text, int size);

class Pmi1Collective : public Collective {
 public:
  static Result<std::unique_ptr<Pmi1Collective>> Open(const EnvSnapshot& env);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return static_cast<int>(local_peers_.size()); }
  Result<std::string> AllgatherWorld(const std::string& mine) override;
  Result<std::string> AllgatherLocal(const std::string& mine) override;
  Result<std::string> Broadcast(const std::string& data) override;

 private:
  Pmi1Collective() = default;
  // Sends one command line; returns the reply's fields after checking that
  // it is `reply` and, where it says, rc=0.
  Result<std::vector<std::pair<std::string, std::string>>> Command(const std::string& line,
                                                                   const std::string& reply);
  Result<std::string> Get(int rank, const std::string& key);
  Status Put(const std::string& key, const std::string& bytes);
  Result<std::string> Exchange(const std::string* mine, const std::vector<int>& from);

  int fd_ = -1;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::vector<int> local_peers_;
  std::string kvs_;
  size_t chunk_ = 256;  // raw bytes per value (hex doubles it; vallen_max bounds it)
  std::string pending_;  // bytes read past the last reply line
  int round_ = 0;
};

}  // namespace aml
