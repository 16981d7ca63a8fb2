#include "shim/world/port.h"

#include <cstdint>

namespace aml {

int DerivedPort(std::string_view job_id) {
  // FNV-1a: stable across builds and platforms.
  uint32_t h = 2166136261u;
  for (unsigned char c : job_id) {
    h ^= c;
    h *= 16777619u;
  }
  return kDerivedPortMin +
         static_cast<int>(h % (kDerivedPortMax - kDerivedPortMin + 1));
}

}  // namespace aml
