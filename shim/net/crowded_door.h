// A listener's door under a crowd: rank 0's MASTER_PORT (the preflight's
// hellos, the control plane's joins) and a node leader's socket. The job's
// own shims send their whole hello the moment they connect; strangers that
// open connections and say nothing must not keep them out (README.md, "TCP
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

// What a report says when seats were given up: `silent` of them had sent
// nothing, `partial` part of a hello (e.g. "MASTER_PORT is flooded: 1,200
// connection(s) that had sent nothing were closed to make room ...").
std::string FloodNote(const std::string& door, int silent, int partial);

}  // namespace aml
