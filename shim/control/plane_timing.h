// The control plane's timing, computed once from the options: the real
// plane (plane.cc), the supervisor's looks (app.cc) and the simulator
// (shim/sim) take it from here, so that what is simulated is what runs.
#pragma once

#include <optional>

namespace aml {

struct PlaneTiming {
  // A heartbeat on every link: --hang-timeout / 10 within [0.25 s, 1 s];
  // 1 s without a hang watchdog.
  double beat_s = 1;
  // The first seconds after go, when a silent link is given kMaxSilenceS
  // (thousands of shims starting ranks on a few cores; liveness.h).
  double startup_s = 30;
  // With the flight recorder and --hang-timeout, each node looks at its
  // ranks' records every --hang-timeout / 3 while they write nothing
  // (0: no look).
  double look_every_s = 0;
};

PlaneTiming TimingOf(std::optional<double> hang_timeout_s, bool flight_recorder);

}  // namespace aml
