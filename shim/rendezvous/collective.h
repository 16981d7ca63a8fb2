// The few collective operations the rendezvous needs, so that its logic runs
// over real MPI (mpi_collective.h) or, in tests, over threads.
#pragma once

#include <string>

#include "shim/base/result.h"

namespace aml {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This process's rank and size among the processes of its node
  // (MPI_COMM_TYPE_SHARED), ordered by world rank.
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // Every process passes a string of the same length; each gets all of them
  // concatenated in rank order. Local: among the processes of this node.
  virtual Result<std::string> AllgatherWorld(const std::string& mine) = 0;
  virtual Result<std::string> AllgatherLocal(const std::string& mine) = 0;
  // Rank 0's `data` (any length; ignored on other ranks) reaches every rank.
  virtual Result<std::string> Broadcast(const std::string& data) = 0;
};

}  // namespace aml
