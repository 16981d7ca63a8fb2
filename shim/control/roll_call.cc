#include "shim/control/roll_call.h"

#include <algorithm>
#include <map>
#include <set>

#include "launch/flight/fr_env.h"
#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/range_list.h"
#include "shim/base/text_list.h"
#include "shim/base/units.h"

namespace aml {
namespace {

struct Group {
  std::string signature;  // or "no stack: <why>"
  bool has_stack = true;
  std::vector<int> ranks;
  std::set<int> nodes;
  std::set<std::string> hosts;
};

// Largest first; equal sizes in rank order.
std::vector<Group> GroupBySignature(const std::vector<RankReport>& reports) {
  std::map<std::string, Group> by;
  for (const RankReport& r : reports) {
    const bool has = !r.signature.empty();
    const std::string key = has ? r.signature : "no stack: " + r.why_none;
    Group& g = by[key];
    g.signature = key;
    g.has_stack = has;
    g.ranks.push_back(r.rank);
    g.nodes.insert(r.node);
    g.hosts.insert(r.host);
  }
  std::vector<Group> groups;
  for (auto& [key, g] : by) {
    std::sort(g.ranks.begin(), g.ranks.end());
    groups.push_back(std::move(g));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    return a.ranks.front() < b.ranks.front();
  });
  return groups;
}

std::string Where(const Group& g) {
  std::vector<std::string> nodes, hosts;
  for (int n : g.nodes) nodes.push_back(std::to_string(n));
  for (const std::string& h : g.hosts) hosts.push_back(EscapeControl(h));
  const std::string node_word = nodes.size() == 1 ? "node " : "nodes ";
  const std::string host_word = hosts.size() == 1 ? "host " : "hosts ";
  return node_word + JoinCapped(nodes, 8) + ", " + host_word + JoinCapped(hosts, 8);
}

}  // namespace

Culprit CulpritOf(const std::vector<RankReport>& reports, int world_size) {
  std::vector<RankFlight> flights;
  flights.reserve(reports.size());
  for (const RankReport& r : reports) {
    RankFlight f;
    f.rank = r.rank;
    f.node = r.node;
    f.shim = r.shim;
    f.host = r.host;
    f.fr = r.fr;
    f.why_none = r.fr_why;
    flights.push_back(std::move(f));
  }
  return FindCulprit(flights, world_size);
}

std::string FormatRollCall(const HangFacts& f) {
  std::string out = "aml-shim: hung: no rank of the job wrote any output for " +
                    FormatNumber(f.silent_s, "%.0f") + " s (--hang-timeout " +
                    FormatRate(f.timeout_s) + " s); where each of the " +
                    std::to_string(f.reports.size()) + " ranks that answered was:\n";
  const std::vector<Group> groups = GroupBySignature(f.reports);
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    std::string who = g.ranks.size() == 1
                          ? "rank " + std::to_string(g.ranks[0])
                          : std::to_string(g.ranks.size()) + " ranks (" + FormatRanges(g.ranks) + ")";
    // The largest group of many is the crowd: its places are counted, the
    // smaller groups (the suspects) are named in full.
    const bool crowd = i == 0 && groups.size() > 1 && g.ranks.size() > 8;
    std::string where = crowd ? "on " + std::to_string(g.nodes.size()) + " node(s)" : Where(g);
    out += "aml-shim:   " + who + " [" + where + "] " + (g.has_stack ? "in " : "") +
           EscapeControl(g.signature) + "\n";
  }
  if (!f.missing.empty())
    out += "aml-shim:   no stacks from " + JoinCapped(f.missing, 8) +
           " (gone, or no answer in time)\n";
  if (f.culprit) {
    out += CulpritLine(*f.culprit);
    for (const std::string& line : f.ras) out += line;
    bool kept = false;
    for (const RankReport& r : f.reports) kept = kept || r.fr.has_value();
    if (kept && !f.log_dir.empty())
      out += "aml-shim: each rank's flight record is kept as " +
             FlightRecordPrefix(f.attempt) + "R under --log-dir " + EscapeControl(f.log_dir) +
             " on its node; read them together with: torchfrtrace " + EscapeControl(f.log_dir) +
             " -p " + FlightRecordPrefix(f.attempt) + "\n";
  }
  // Where the full stacks are: a Python rank's faulthandler dump ("Fatal
  // Python error: Aborted", after the SIGABRT that asked for it) is in its
  // stderr either way.
  if (!f.log_dir.empty())
    out += "aml-shim: every rank's full stack is in rank-R.stack under --log-dir " +
           EscapeControl(f.log_dir) +
           " on its node; a Python rank's faulthandler dump (\"Fatal Python error: Aborted\") "
           "is also in its stderr above; ending the job (exit 124)\n";
  else
    out += "aml-shim: each Python rank's full stack is its faulthandler dump in its stderr above "
           "(\"Fatal Python error: Aborted\": aml-shim sent SIGABRT to ask for it; --log-dir "
           "would keep every rank's in rank-R.stack); ending the job (exit 124)\n";
  return out;
}

std::string HangJson(const std::string& run_id, const HangFacts& f) {
  JsonWriter j;
  j.BeginObject();
  j.Key("run").String(run_id);
  j.Key("hang").BeginObject();
  j.Key("timeout_s").Number(f.timeout_s);
  j.Key("silent_s").Number(f.silent_s);
  j.Key("groups").BeginArray();
  for (const Group& g : GroupBySignature(f.reports)) {
    j.BeginObject();
    j.Key(g.has_stack ? "frames" : "no_stack").String(
        g.has_stack ? g.signature : g.signature.substr(10));
    j.Key("ranks").BeginArray();
    for (int r : g.ranks) j.Int(r);
    j.EndArray();
    j.Key("nodes").BeginArray();
    for (int n : g.nodes) j.Int(n);
    j.EndArray();
    j.Key("hosts").BeginArray();
    for (const std::string& h : g.hosts) j.String(h);
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("missing").BeginArray();
  for (const std::string& m : f.missing) j.String(m);
  j.EndArray();
  j.EndObject();
  if (f.culprit) j.Key("culprit").Raw(CulpritJson(*f.culprit));
  if (!f.ras.empty()) {
    j.Key("nccl_ras").BeginArray();
    for (const std::string& line : f.ras) j.String(line.substr(0, line.size() - 1));
    j.EndArray();
  }
  j.EndObject();
  return j.str() + "\n";
}

}  // namespace aml
