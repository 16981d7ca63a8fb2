#include "launch/flight/waited.h"

#include <algorithm>
#include <map>

#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/range_list.h"
#include "shim/base/text_list.h"

namespace aml {
namespace {

// The collective a rank's record says it waits in: the first it entered
// and had not completed, in the first such group; else the last it entered
// (`*completed`); null: none.
const FrOp* WaitsIn(const FrSummary& s, const FrGroup** group, bool* completed) {
  for (const FrGroup& g : s.groups) {
    if (g.enqueued < 0 || g.enqueued <= g.completed) continue;
    *group = &g;
    *completed = false;
    return g.pending.seq >= 0 && g.pending.seq == g.completed + 1 ? &g.pending : &g.last;
  }
  for (const FrGroup& g : s.groups) {
    if (g.enqueued < 0 || g.last.seq < 0) continue;
    *group = &g;
    *completed = true;
    return &g.last;
  }
  return nullptr;
}

std::string RanksWord(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + FormatRanges(ranks);
}

// The reasons no record came, each with its ranks.
std::map<std::string, std::vector<int>> ByWhy(const Waited& w) {
  std::map<std::string, std::vector<int>> whys;
  for (const auto& [rank, why] : w.no_record) whys[why].push_back(rank);
  for (auto& [why, ranks] : whys) std::sort(ranks.begin(), ranks.end());
  return whys;
}

}  // namespace

Waited FindWaited(const std::vector<RankFlight>& records, int failed_rank) {
  Waited w;
  std::map<std::string, size_t> at;  // a collective's key: its place in w.in
  for (const RankFlight& r : records) {
    if (r.rank == failed_rank) continue;
    if (!r.fr) {
      w.no_record.emplace_back(r.rank, r.why_none.empty() ? "no record" : r.why_none);
      continue;
    }
    const FrGroup* g = nullptr;
    bool completed = false;
    const FrOp* op = WaitsIn(*r.fr, &g, &completed);
    if (!op) {
      w.idle.push_back(r.rank);
      continue;
    }
    const std::string key = g->pg + '\x1f' + g->desc + '\x1f' + FrOpWords(*op);
    auto [it, fresh] = at.emplace(key, w.in.size());
    if (fresh) w.in.push_back({g->pg, g->desc, *op, {}, {}});
    w.in[it->second].ranks.push_back(r.rank);
    if (completed) w.in[it->second].completed.push_back(r.rank);
  }
  for (Waited::In& in : w.in) {
    std::sort(in.ranks.begin(), in.ranks.end());
    std::sort(in.completed.begin(), in.completed.end());
  }
  std::stable_sort(w.in.begin(), w.in.end(), [](const Waited::In& a, const Waited::In& b) {
    return a.ranks.size() > b.ranks.size();
  });
  std::sort(w.idle.begin(), w.idle.end());
  std::sort(w.no_record.begin(), w.no_record.end());
  return w;
}

std::string WaitedLine(int failed_rank, const std::string& status, const Waited& w) {
  if (w.in.empty() && w.idle.empty()) return "";
  std::vector<std::string> parts;
  // "waited in" when none had completed it; else "were last in" (a peer's
  // death may end a collective as completed on some ranks and not others).
  for (const Waited::In& in : w.in)
    parts.push_back(RanksWord(in.ranks) +
                    (in.completed.empty()   ? " waited in "
                     : in.ranks.size() == 1 ? " was last in "
                                            : " were last in ") +
                    FrOpWords(in.op) + " of " + FrGroupWords(in.pg, in.desc));
  std::string out = "aml-shim: rank " + std::to_string(failed_rank) + " failed (" +
                    EscapeControl(status) + ") while " + JoinCapped(parts, 3);
  if (!w.idle.empty())
    out += (w.in.empty() ? "" : "; ") + RanksWord(w.idle) + " had entered no collective";
  std::vector<std::string> whys;
  for (const auto& [why, ranks] : ByWhy(w)) whys.push_back(RanksWord(ranks) + ": " + EscapeControl(why));
  if (!whys.empty()) out += "; no flight record from " + JoinCapped(whys, 3);
  return out + "\n";
}

std::string WaitedJson(int failed_rank, const std::string& status, const Waited& w) {
  const std::string line = WaitedLine(failed_rank, status, w);
  if (line.empty()) return "";
  JsonWriter j;
  j.BeginObject().Key("failed_rank").Int(failed_rank).Key("in").BeginArray();
  for (const Waited::In& in : w.in) {
    j.BeginObject().Key("group").String(in.pg).Key("desc").String(in.desc);
    j.Key("seq").Int(in.op.seq).Key("op").String(in.op.op).Key("sizes").String(in.op.sizes);
    j.Key("dtype").String(in.op.dtype).Key("frame").String(in.op.frame);
    j.Key("completed_by").String(FormatRanges(in.completed));
    j.Key("ranks").String(FormatRanges(in.ranks)).EndObject();
  }
  j.EndArray().Key("idle").String(FormatRanges(w.idle)).Key("no_record").BeginArray();
  for (const auto& [why, ranks] : ByWhy(w))
    j.BeginObject().Key("ranks").String(FormatRanges(ranks)).Key("why").String(why).EndObject();
  j.EndArray().Key("line").String(line.substr(10, line.size() - 11)).EndObject();
  return j.str();
}

}  // namespace aml
