// aml-plane-sim: the control plane's real state machines for N shims in one
// process, on a simulated network and a virtual clock (sim_cluster.h),
// every run checked against what must happen (oracle.h). Prints one JSON
// line per run (docs/control-plane.md, "Simulation").
//
//   aml-plane-sim --shims N|A-B (--seed S | --seeds A-B | --seeds fresh:N)
//                 [--faults KIND|SPEC] [--latency-us U] [--cost-us C]
//                 [--fanout F|A-B] [--per-node K] [--grace S] [--hang-timeout S]
//                 [--frames] [--keep-going]
//   aml-plane-sim --file FILE    (one set of the options above a line)
//   aml-plane-sim --measure-cost
//   aml-plane-sim --job-states   (docs/job-states.dot, from job_states.cc)
//
// With --seeds every seed runs and one summary line follows: its
// "invariants" is "ok" only if every seed held. `fresh:N` runs N seeds from
// a base drawn now (printed first, so that a broken run can be replayed):
// every CI run searches seeds no run searched before. Exit 0 when every
// invariant held, 1 when one broke, 125 on a bad option.
#include <sys/random.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/parse_int.h"
#include "shim/base/units.h"
#include "shim/control/job_states.h"
#include "shim/sim/sim_cluster.h"

namespace aml {
namespace {

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "aml-plane-sim: %s\nusage: aml-plane-sim --shims N|A-B (--seed S | --seeds A-B | "
               "--seeds fresh:N) "
               "[--faults none|fail|freeze|cut|kill|partition|hang|restart|sigterm|random|SPEC] "
               "[--latency-us U] [--cost-us C] [--fanout F|A-B] [--per-node K] [--grace S] "
               "[--hang-timeout S] [--frames] [--keep-going]\n"
               "       aml-plane-sim --file FILE\n"
               "       aml-plane-sim --measure-cost\n"
               "       aml-plane-sim --job-states\n",
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

Status Number(const std::string& flag, const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(*out >= 0))
    return Error{flag + " '" + text + "' is not a number of 0 or more"};
  return Ok();
}

// One command line's runs: the options, and the ranges drawn per seed.
struct Sweep {
  SimOptions o;
  bool have_seed = false;
  bool keep_going = false;  // every seed, even after one broke
  int min_shims = 2, max_shims = 2;
  int min_fanout = 32, max_fanout = 32;
  int64_t first = 1, last = 1;
};

// A base for `fresh:N` seeds, from the kernel's entropy.
int64_t FreshBase() {
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) r = 12345;
  return 1000000 + static_cast<int64_t>(r % 1000000000u);
}

Status Parse(const std::vector<std::string>& args, Sweep* w) {
  SimOptions& o = w->o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") continue;
    if (a == "--keep-going") {
      w->keep_going = true;
      continue;
    }
    if (a == "--frames") {
      o.frames = true;
      continue;
    }
    if (i + 1 >= args.size()) return Error{a + " needs a value"};
    const std::string& v = args[++i];
    if (a == "--shims") {
      // N, or A-B: a size drawn for each seed (log-uniform, from the seed).
      auto r = Range("--shims", v, 1, 1000000);
      if (!r.ok()) return r.error();
      w->min_shims = static_cast<int>(r->first);
      w->max_shims = static_cast<int>(r->second);
    } else if (a == "--seed") {
      auto n = ParseInt("--seed", v, 0, INT64_MAX);
      if (!n.ok()) return n.error();
      w->first = w->last = *n;
      w->have_seed = true;
    } else if (a == "--seeds" && v.rfind("fresh:", 0) == 0) {
      auto n = ParseInt("--seeds", v.substr(6), 1, 100000000);
      if (!n.ok()) return n.error();
      w->first = FreshBase();
      w->last = w->first + *n - 1;
      w->have_seed = true;
      std::fprintf(stderr, "aml-plane-sim: fresh seeds %lld-%lld\n",
                   static_cast<long long>(w->first), static_cast<long long>(w->last));
    } else if (a == "--seeds") {
      auto r = Range("--seeds", v, 0, INT64_MAX);
      if (!r.ok()) return r.error();
      w->first = r->first;
      w->last = r->second;
      w->have_seed = true;
    } else if (a == "--faults") {
      o.faults = v;
    } else if (a == "--latency-us") {
      if (Status st = Number(a, v, &o.latency_us); !st.ok()) return st;
    } else if (a == "--cost-us") {
      if (Status st = Number(a, v, &o.cost_us); !st.ok()) return st;
    } else if (a == "--hang-timeout") {
      if (Status st = Number(a, v, &o.hang_timeout_s); !st.ok()) return st;
    } else if (a == "--grace") {
      if (Status st = Number(a, v, &o.grace_s); !st.ok()) return st;
    } else if (a == "--per-node") {
      auto n = ParseInt("--per-node", v, 1, 1000000);
      if (!n.ok()) return n.error();
      o.per_node = static_cast<int>(*n);
    } else if (a == "--fanout") {
      // F, or A-B: a fan-out drawn for each seed (a small one makes a deep
      // tree of few shims: the paths of a job of thousands, cheaply).
      auto r = Range("--fanout", v, 2, 1024);
      if (!r.ok()) return r.error();
      w->min_fanout = static_cast<int>(r->first);
      w->max_fanout = static_cast<int>(r->second);
    } else {
      return Error{"unknown option '" + a + "'"};
    }
  }
  if (!w->have_seed) return Error{"--seed or --seeds is required"};
  return Ok();
}

struct Tally {
  int runs = 0, broken_runs = 0;
  double wall = 0;
  std::string broken;  // the first broken invariant
};

// Every seed of the sweep; false on a bad option (said on stderr).
bool Run(Sweep w, Tally* t) {
  SimOptions& o = w.o;
  for (int64_t seed = w.first; seed <= w.last; ++seed) {
    o.seed = static_cast<uint64_t>(seed);
    o.shims = w.min_shims;
    if (w.max_shims > w.min_shims) {
      std::mt19937_64 rng(o.seed * 0x9e3779b97f4a7c15ULL);
      const double x = std::uniform_real_distribution<double>(
          std::log(w.min_shims), std::log(w.max_shims + 1.0))(rng);
      o.shims = std::min(w.max_shims, static_cast<int>(std::exp(x)));
    }
    o.fanout = w.min_fanout;
    if (w.max_fanout > w.min_fanout) {
      std::mt19937_64 rng(o.seed * 0xbf58476d1ce4e5b9ULL + 1);
      o.fanout = std::uniform_int_distribution<int>(w.min_fanout, w.max_fanout)(rng);
    }
    auto r = RunSim(o);
    if (!r.ok()) {
      Usage(r.error().message);
      return false;
    }
    ++t->runs;
    t->wall += r->wall_s;
    std::printf("%s\n", r->Json().c_str());
    std::fflush(stdout);
    if (r->invariants != "ok") ++t->broken_runs;
    if (t->broken.empty() && r->invariants != "ok") t->broken = r->invariants;
    if (!t->broken.empty() && !w.keep_going) break;  // the first, to replay
  }
  return true;
}

// A line's words, with '...' quoting (as the replay commands print them).
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char ch : line) {
    if (ch == '\'') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (ch == ' ' || ch == '\t')) {
      if (any) out.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += ch;
      any = true;
    }
  }
  if (any) out.push_back(cur);
  return out;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The simulated shims' own lines (the node machine's) are the real
  // code's; the runs' results say what happened (AML_SIM_DEBUG: shown).
  if (!std::getenv("AML_SIM_DEBUG")) SetVerbosity(Verbosity::kQuiet);
  if (args.size() == 1 && args[0] == "--measure-cost") {
    std::printf("{\"frame_cost_us\":%.3f}\n", MeasureFrameCostUs());
    return 0;
  }
  if (args.size() == 1 && args[0] == "--job-states") {
    std::fputs(JobStatesDot().c_str(), stdout);
    return 0;
  }
  std::vector<Sweep> sweeps;
  std::string label;
  if (args.size() == 2 && args[0] == "--file") {
    // Regressions: each line a command's options (a leading "aml-plane-sim"
    // is skipped, so that a printed replay can be pasted as it is).
    std::ifstream in(args[1]);
    if (!in) return Usage("--file '" + args[1] + "' cannot be read");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.find_first_not_of(" \t") == std::string::npos || line[line.find_first_not_of(" \t")] == '#')
        continue;
      std::vector<std::string> words = Words(line);
      if (!words.empty() && words[0] == "aml-plane-sim") words.erase(words.begin());
      Sweep w;
      if (Status st = Parse(words, &w); !st.ok())
        return Usage(args[1] + ":" + std::to_string(n) + ": " + st.error().message);
      w.keep_going = true;
      sweeps.push_back(w);
    }
    label = args[1];
  } else {
    Sweep w;
    if (Status st = Parse(args, &w); !st.ok()) return Usage(st.error().message);
    sweeps.push_back(w);
    if (w.first != w.last)
      label = std::to_string(w.first) + "-" + std::to_string(w.last);
  }
  Tally t;
  for (const Sweep& w : sweeps) {
    if (!Run(w, &t)) return 125;
    if (!t.broken.empty() && !w.keep_going) break;
  }
  if (!label.empty())
    std::printf("{\"seeds\":%s,\"runs\":%d,\"broken\":%d,\"wall_s\":%.3f,\"invariants\":%s}\n",
                JsonQuote(label).c_str(), t.runs, t.broken_runs, t.wall,
                JsonQuote(t.broken.empty() ? "ok" : t.broken).c_str());
  return t.broken.empty() ? 0 : 1;
}

}  // namespace
}  // namespace aml

int main(int argc, char** argv) { return aml::Main(argc, argv); }
