// A listener's door under a crowd: rank 0's MASTER_PORT (the preflight's
// hellos, the control plane's joins) and a node leader's socket. The job's
// own shims send their whole hello the moment they connect; strangers that
// open connections and say nothing must not keep them out (docs/preflight.md, "TCP
// preflight: limits and strangers"). So the door never stops accepting: when
// every seat is taken, a newcomer gets the seat of the connection that has
// sent the fewest bytes, the longest-waiting among equals, which is closed
// and counted. What a connection sends first decides, not who came first.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace aml {

// Connections accepted in one go before the waiting ones are read again.
inline constexpr size_t kDoorAcceptBurst = 64;

struct DoorSeat {
  size_t bytes = 0;   // received so far
  double since = 0;   // accepted at (any monotonic clock)
};

// The seat to give up for a newcomer (`seats` not empty).
size_t SeatToFree(const std::vector<DoorSeat>& seats);

// The seats one door gave up, for its report.
class DoorCrowd {
 public:
  // A seat was given up; its connection had sent `bytes`.
  void GaveUp(size_t bytes) { ++(bytes == 0 ? silent_ : partial_); }
  // "" when none was; else e.g. "MASTER_PORT is flooded: 1200 connection(s)
  // that had sent nothing were closed to make room for the job's shims ...".
  std::string Note(const std::string& door) const;

 private:
  int silent_ = 0;   // had sent nothing
  int partial_ = 0;  // had sent part of a hello
};

}  // namespace aml
