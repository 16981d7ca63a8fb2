#include "shim/net/crowded_door.h"

namespace aml {

size_t SeatToFree(const std::vector<DoorSeat>& seats) {
  size_t best = 0;
  for (size_t i = 1; i < seats.size(); ++i) {
    const DoorSeat& s = seats[i];
    const DoorSeat& b = seats[best];
    if (s.bytes < b.bytes || (s.bytes == b.bytes && s.since < b.since)) best = i;
  }
  return best;
}

std::string DoorCrowd::Note(const std::string& door) const {
  if (silent_ + partial_ == 0) return "";
  std::string what;
  if (silent_ > 0) what = std::to_string(silent_) + " connection(s) that had sent nothing";
  if (partial_ > 0)
    what += (what.empty() ? "" : " and ") + std::to_string(partial_) +
            " that had sent part of a hello";
  return door + " is flooded: " + what +
         " were closed to make room for the job's shims (something outside the job keeps "
         "connecting to it: a port scanner, a health check, another job on the same port?)";
}

}  // namespace aml
