// One simulated run's figures as JSON, and the per-frame cost measured on
// this machine (sim_cluster.h).
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "shim/base/json.h"
#include "shim/base/units.h"
#include "shim/control/liveness.h"
#include "shim/control/wire.h"
#include "shim/sim/sim_cluster.h"

namespace aml {

std::string SimResult::Json() const {
  auto num = [](double x) { return x < 0 ? std::string("null") : FormatNumber(x, "%.6g"); };
  std::string j = "{";
  j += "\"shims\":" + std::to_string(shims);
  j += ",\"seed\":" + std::to_string(seed);
  if (fanout != 32) j += ",\"fanout\":" + std::to_string(fanout);
  j += ",\"faults\":" + JsonQuote(faults);
  j += ",\"plan\":" + JsonQuote(plan);
  j += ",\"depth\":" + std::to_string(depth);
  j += ",\"join_s\":" + num(join_s);
  j += ",\"stop_p99_s\":" + num(stop_p99_s);
  j += ",\"stop_max_s\":" + num(stop_max_s);
  j += ",\"lost_detect_s\":" + num(lost_detect_s);
  j += ",\"rollcall_s\":" + num(rollcall_s);
  j += ",\"restart_round_s\":" + num(restart_round_s);
  j += ",\"replace_s\":" + num(replace_s);
  j += ",\"new_root\":" + std::to_string(new_root);
  j += ",\"end_s\":" + num(end_s);
  j += ",\"exit_code\":" + std::to_string(exit_code);
  j += ",\"restarts\":" + std::to_string(restarts);
  j += ",\"msgs_max_per_shim\":" + std::to_string(msgs_max_per_shim);
  j += ",\"rank0_msgs\":" + std::to_string(rank0_msgs);
  j += ",\"rank0_bytes\":" + std::to_string(rank0_bytes);
  j += ",\"rank0_cpu_s\":" + FormatNumber(rank0_cpu_s, "%.4f");
  j += ",\"events\":" + std::to_string(events);
  if (pace_looks > 0) {
    j += ",\"pace_looks\":" + std::to_string(pace_looks) + ",\"named\":" + JsonQuote(named);
    j += ",\"pace_part_bytes\":" + std::to_string(pace_part_bytes);
  }
  j += ",\"wall_s\":" + FormatNumber(wall_s, "%.3f");
  j += ",\"invariants\":" + JsonQuote(invariants);
  if (!frames.empty()) {
    j += ",\"frames\":[";
    for (size_t i = 0; i < frames.size(); ++i) j += (i ? "," : "") + JsonQuote(frames[i]);
    j += "]";
  }
  return j + "}";
}

// A frame's cost, measured on this machine: a heartbeat sent and received
// over a local socket pair, decoded, and the child's liveness noted.
double MeasureFrameCostUs() {
  int sv[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  FrameLink a{Fd(sv[0]), 1 << 20}, b{Fd(sv[1]), 1 << 20};
  Liveness live;
  live.Start(1);
  constexpr int kN = 20000;
  std::vector<std::string> frames;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kN; ++i) {
    a.Send(Msg("beat").SetNumber("age", 0.25 * i).Encode());
    frames.clear();
    b.Read(&frames);
    for (const std::string& f : frames) {
      auto m = Msg::Decode(f);
      if (m.ok()) live.Heard(1 + m->Number("age"));
    }
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         kN;
}

}  // namespace aml
