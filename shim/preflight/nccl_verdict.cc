#include "shim/preflight/nccl_verdict.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "shim/base/units.h"
#include "shim/preflight/gpu_runtime.h"
#include "shim/base/parse_int.h"
#include "shim/base/text_list.h"

namespace aml {
namespace {

std::string Fixed(double x, const char* format = "%.2f") { return FormatNumber(x, format); }

std::string Gpus(int n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

// "all-reduce of 256 MiB in 1.234 ms: busbw 371.20 GB/s, algbw 212.11 GB/s"
std::string Measured(uint64_t bytes, double seconds, int n, const Bandwidth& bw) {
  std::string s = "all-reduce of " + FormatBytes(bytes) + " in " + Fixed(seconds * 1e3, "%.3f") +
                  " ms: ";
  if (n > 1) return s + "busbw " + Fixed(bw.busbw_gbps) + " GB/s, algbw " +
                    Fixed(bw.algbw_gbps) + " GB/s";
  return s + "algbw " + Fixed(bw.algbw_gbps) + " GB/s (one GPU: no bus bandwidth)";
}

struct Node {
  std::set<std::string> hosts;
  int gpus = 0;
  bool complete = true;  // every shim on it measured
  double seconds = 0;
};

// "a,b,c and 2 more hosts", at most 8 named.
std::string Hosts(const std::set<std::string>& hosts) {
  return JoinCapped({hosts.begin(), hosts.end()}, 8, ",", " hosts");
}

}  // namespace

Result<std::vector<WorkerGo>> PlanNcclIds(const std::vector<GpuHello>& hellos,
                                          const std::vector<std::string>& hosts) {
  std::vector<std::string> problems;
  std::map<int, std::string> versions;  // NCCL version -> "rank@host, ..."
  std::map<int, int> version_count;
  std::map<int, std::string> node_ids;
  for (size_t r = 0; r < hellos.size(); ++r) {
    const GpuHello& h = hellos[r];
    const std::string who = "rank " + std::to_string(r) + " on " + hosts[r];
    if (!h.ready.ok) {
      problems.push_back("preflight nccl: " + who + ": " + h.ready.error);
      continue;
    }
    if (version_count[h.ready.nccl_version]++ < 4)
      versions[h.ready.nccl_version] += (versions[h.ready.nccl_version].empty() ? "" : ", ") +
                                        std::to_string(r) + "@" + hosts[r];
    if (!h.ready.node_id.empty()) node_ids.emplace(h.node, h.ready.node_id);
  }
  if (versions.size() > 1) {
    std::string s = "preflight nccl: the ranks load different NCCL versions (NCCL refuses to "
                    "mix them):";
    for (const auto& [v, who] : versions)
      s += " " + FormatNcclVersion(v) + " on " + who +
           (version_count[v] > 4 ? " and " + std::to_string(version_count[v] - 4) + " more" : "") +
           ";";
    s.pop_back();
    problems.push_back(s);
  }
  std::set<int> nodes;
  for (const GpuHello& h : hellos) nodes.insert(h.node);
  if (problems.empty()) {
    for (int n : nodes)
      if (!node_ids.count(n))
        problems.push_back("preflight nccl: node " + std::to_string(n) +
                           " has no NCCL id: no shim there has LOCAL_RANK 0");
    if (nodes.size() > 1 && (hellos.empty() || hellos[0].ready.world_id.empty()))
      problems.push_back("preflight nccl: rank 0 made no NCCL id for the job");
  }
  if (!problems.empty()) {
    std::string s;
    for (const auto& p : problems) s += (s.empty() ? "" : "\n") + p;
    return Error{s};
  }
  std::vector<WorkerGo> go;
  for (const GpuHello& h : hellos)
    go.push_back({node_ids[h.node], nodes.size() > 1 ? hellos[0].ready.world_id : ""});
  return go;
}

Bandwidth AllReduceBandwidth(uint64_t bytes, double seconds, int nranks) {
  Bandwidth bw;
  if (seconds <= 0 || nranks < 1) return bw;
  bw.algbw_gbps = static_cast<double>(bytes) / seconds / 1e9;
  bw.busbw_gbps = bw.algbw_gbps * 2.0 * (nranks - 1) / nranks;
  return bw;
}

NcclVerdict JudgeAllReduce(const std::vector<ShimOutcome>& shims, uint64_t bytes,
                           std::optional<double> min_busbw_gbps) {
  NcclVerdict v;
  std::map<int, Node> nodes;
  bool world_complete = true;
  double world_s = 0;
  int world_gpus = 0;
  std::vector<int> stopped;
  // Ranks with the same error share a line: 1000 nodes without a driver, or
  // every rank of a hung collective, are one finding.
  std::vector<std::pair<std::string, std::vector<const ShimOutcome*>>> errors;
  for (const ShimOutcome& s : shims) {
    Node& n = nodes[s.node];
    n.hosts.insert(s.host);
    n.gpus += s.gpus;
    world_gpus += s.gpus;
    if (!s.finished) {
      stopped.push_back(s.rank);
      n.complete = world_complete = false;
      continue;
    }
    if (!s.ok) {
      v.failed = true;
      auto same = std::find_if(errors.begin(), errors.end(),
                               [&](const auto& e) { return e.first == s.error; });
      if (same == errors.end()) errors.push_back({s.error, {&s}});
      else same->second.push_back(&s);
      n.complete = world_complete = false;
      continue;
    }
    if (s.node_s > 0) n.seconds = std::max(n.seconds, s.node_s);
    else n.complete = false;
    if (s.world_s > 0) world_s = std::max(world_s, s.world_s);
    else world_complete = false;
  }
  for (const auto& [error, who] : errors) {
    std::set<std::string> hosts;
    std::vector<int> ranks;
    for (const ShimOutcome* s : who) {
      hosts.insert(s->host);
      ranks.push_back(s->rank);
    }
    v.lines.push_back("preflight nccl: " + RankList(ranks) + " on " + Hosts(hosts) + ": " + error);
  }
  if (!stopped.empty()) {
    v.failed = true;
    std::string s = "preflight nccl: " + std::to_string(stopped.size()) +
                    (stopped.size() == 1 ? " rank" : " ranks") +
                    " had not finished when rank 0 stopped the preflight at the failure above: " +
                    RankList(stopped);
    v.lines.push_back(s);
  }
  for (const auto& [id, n] : nodes) {
    if (!n.complete) continue;
    Bandwidth bw = AllReduceBandwidth(bytes, n.seconds, n.gpus);
    std::string line = "preflight nccl: node " + std::to_string(id) + " (" + Hosts(n.hosts) +
                       "): " + Gpus(n.gpus) + ", " + Measured(bytes, n.seconds, n.gpus, bw);
    if (min_busbw_gbps && n.gpus > 1 && bw.busbw_gbps < *min_busbw_gbps) {
      v.failed = true;
      line += " -- under --min-busbw " + Fixed(*min_busbw_gbps, "%g") + " GB/s";
    } else if (min_busbw_gbps && n.gpus == 1) {
      line += " -- one GPU moves nothing between GPUs: --min-busbw not judged";
    }
    v.lines.push_back(line);
  }
  if (nodes.size() > 1 && world_complete && world_s > 0) {
    Bandwidth bw = AllReduceBandwidth(bytes, world_s, world_gpus);
    v.lines.push_back("preflight nccl: all " + std::to_string(nodes.size()) + " nodes, " +
                      Gpus(world_gpus) + ", " + Measured(bytes, world_s, world_gpus, bw));
  }
  return v;
}

}  // namespace aml
