// aml-plane-sim: the control plane's real state machine for N shims in one
// process, on a simulated network and a virtual clock (sim_cluster.h).
// Prints one JSON line per run (docs/control-plane.md, "Simulation").
//
//   aml-plane-sim --shims N|A-B (--seed S | --seeds A-B) [--faults KIND|SPEC]
//                 [--latency-us U] [--cost-us C] [--fanout F] [--per-node K]
//                 [--grace S] [--hang-timeout S] [--frames] [--json]
//   aml-plane-sim --measure-cost
//
// With --seeds every seed runs and one summary line follows: its
// "invariants" is "ok" only if every seed held. Exit 0 when they held, 1
// when one broke, 125 on a bad option.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>

#include "shim/base/parse_int.h"
#include "shim/base/units.h"
#include "shim/sim/sim_cluster.h"

namespace aml {
namespace {

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "aml-plane-sim: %s\nusage: aml-plane-sim --shims N (--seed S | --seeds A-B) "
               "[--faults none|fail|freeze|cut|kill|hang|restart|sigterm|random|SPEC] "
               "[--latency-us U] [--cost-us C] [--fanout F] [--per-node K] [--grace S] "
               "[--hang-timeout S] [--frames] [--json]\n"
               "       aml-plane-sim --measure-cost\n",
               why.c_str());
  return 125;
}

// "N" or "A-B" (A <= B), each in [min, max].
Result<std::pair<int64_t, int64_t>> Range(const std::string& flag, const std::string& text,
                                          int64_t min, int64_t max) {
  const auto dash = text.find('-');
  auto lo = ParseInt(flag, text.substr(0, dash), min, max);
  if (!lo.ok()) return lo.error();
  auto hi = dash == std::string::npos ? lo : ParseInt(flag, text.substr(dash + 1), min, max);
  if (!hi.ok()) return hi.error();
  if (*hi < *lo) return Error{flag + " '" + text + "': " + std::to_string(*hi) +
                              " comes before " + std::to_string(*lo)};
  return std::make_pair(*lo, *hi);
}

bool Number(const std::string& flag, const std::string& text, double* out, std::string* why) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(*out >= 0)) {
    *why = flag + " '" + text + "' is not a number of 0 or more";
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  SimOptions o;
  bool have_seed = false;
  int min_shims = 2, max_shims = 2;
  int64_t first = 1, last = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") continue;
    if (a == "--frames") {
      o.frames = true;
      continue;
    }
    if (a == "--measure-cost") {
      std::printf("{\"frame_cost_us\":%.3f}\n", MeasureFrameCostUs());
      return 0;
    }
    if (i + 1 >= argc) return Usage(a + " needs a value");
    const std::string v = argv[++i];
    std::string why;
    if (a == "--shims") {
      // N, or A-B: a size drawn for each seed (log-uniform, from the seed).
      auto r = Range("--shims", v, 1, 1000000);
      if (!r.ok()) return Usage(r.error().message);
      min_shims = static_cast<int>(r->first);
      max_shims = static_cast<int>(r->second);
    } else if (a == "--seed") {
      auto n = ParseInt("--seed", v, 0, INT64_MAX);
      if (!n.ok()) return Usage(n.error().message);
      first = last = *n;
      have_seed = true;
    } else if (a == "--seeds") {
      auto r = Range("--seeds", v, 0, INT64_MAX);
      if (!r.ok()) return Usage(r.error().message);
      first = r->first;
      last = r->second;
      have_seed = true;
    } else if (a == "--faults") {
      o.faults = v;
    } else if (a == "--latency-us") {
      if (!Number(a, v, &o.latency_us, &why)) return Usage(why);
    } else if (a == "--cost-us") {
      if (!Number(a, v, &o.cost_us, &why)) return Usage(why);
    } else if (a == "--hang-timeout") {
      if (!Number(a, v, &o.hang_timeout_s, &why)) return Usage(why);
    } else if (a == "--grace") {
      if (!Number(a, v, &o.grace_s, &why)) return Usage(why);
    } else if (a == "--per-node") {
      auto n = ParseInt("--per-node", v, 1, 1000000);
      if (!n.ok()) return Usage(n.error().message);
      o.per_node = static_cast<int>(*n);
    } else if (a == "--fanout") {
      auto n = ParseInt("--fanout", v, 2, 1024);
      if (!n.ok()) return Usage(n.error().message);
      o.fanout = static_cast<int>(*n);
    } else {
      return Usage("unknown option '" + a + "'");
    }
  }
  if (!have_seed) return Usage("--seed or --seeds is required");
  std::string broken;
  int runs = 0;
  double wall = 0;
  for (int64_t seed = first; seed <= last; ++seed) {
    o.seed = static_cast<uint64_t>(seed);
    o.shims = min_shims;
    if (max_shims > min_shims) {
      std::mt19937_64 rng(o.seed * 0x9e3779b97f4a7c15ULL);
      const double x = std::uniform_real_distribution<double>(
          std::log(min_shims), std::log(max_shims + 1.0))(rng);
      o.shims = std::min(max_shims, static_cast<int>(std::exp(x)));
    }
    auto r = RunSim(o);
    if (!r.ok()) return Usage(r.error().message);
    ++runs;
    wall += r->wall_s;
    std::printf("%s\n", r->Json().c_str());
    std::fflush(stdout);
    if (broken.empty() && r->invariants != "ok") broken = r->invariants;
    if (!broken.empty() && first != last) break;  // the first seed that broke, to replay
  }
  if (first != last)
    std::printf("{\"seeds\":\"%lld-%lld\",\"runs\":%d,\"wall_s\":%.3f,\"invariants\":\"%s\"}\n",
                static_cast<long long>(first), static_cast<long long>(last), runs, wall,
                broken.empty() ? "ok" : broken.c_str());
  return broken.empty() ? 0 : 1;
}

}  // namespace
}  // namespace aml

int main(int argc, char** argv) { return aml::Main(argc, argv); }
