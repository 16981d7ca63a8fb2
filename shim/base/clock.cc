#include "shim/base/clock.h"

#include <time.h>

namespace aml {
namespace {

double Read(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

double MonotonicSeconds() { return Read(CLOCK_MONOTONIC); }
double WallSeconds() { return Read(CLOCK_REALTIME); }

}  // namespace aml
