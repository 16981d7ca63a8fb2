#include "launch/flight/culprit.h"

#include <algorithm>
#include <map>
#include <set>

#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/range_list.h"
#include "shim/base/text_list.h"

namespace aml {
namespace {

struct View {
  std::string pg, desc, ranks;
  std::map<int, const FrGroup*> by_rank;  // the ranks that reported the group
};

// The op a rank's record gives for sequence number `seq` (null: none).
const FrOp* OpAt(const FrGroup& g, int64_t seq) {
  if (g.last.seq == seq) return &g.last;
  if (g.pending.seq == seq) return &g.pending;
  return nullptr;
}

std::string Variant(const FrOp& op) { return op.op + " " + op.sizes + " " + op.dtype; }

std::string Described(const std::string& pg, const std::string& desc) {
  return FrGroupWords(pg, desc);
}

std::string OpWords(const FrOp& op) { return FrOpWords(op); }

std::string WhereOf(const std::vector<CulpritRank>& rs) {
  std::set<int> nodes;
  std::set<std::string> hosts;
  for (const CulpritRank& r : rs) {
    if (r.node < 0) continue;  // its shim never answered
    nodes.insert(r.node);
    hosts.insert(EscapeControl(r.host));
  }
  std::vector<std::string> n, h(hosts.begin(), hosts.end());
  for (int x : nodes) n.push_back(std::to_string(x));
  if (n.empty()) return "node unknown";
  return (n.size() == 1 ? "node " : "nodes ") + JoinCapped(n, 8) +
         (h.size() == 1 ? ", host " : ", hosts ") + JoinCapped(h, 8);
}

std::string Ranks(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + FormatRanges(ranks);
}

// "; <what>ranks 0-1: <why>, rank 3: <other why>": the reasons, each with
// its ranks ("" when none).
std::string Lacking(const std::string& what, const std::vector<std::pair<int, std::string>>& why_of) {
  if (why_of.empty()) return "";
  std::map<std::string, std::vector<int>> whys;
  for (const auto& [rank, why] : why_of) whys[why].push_back(rank);
  std::vector<std::string> parts;
  for (const auto& [why, ranks] : whys) parts.push_back(Ranks(ranks) + ": " + EscapeControl(why));
  return what + JoinCapped(parts, 3);
}

}  // namespace

Culprit FindCulprit(const std::vector<RankFlight>& reports, int world) {
  Culprit c;
  std::map<int, const RankFlight*> who;
  std::vector<std::string> order;  // groups in the order first seen
  std::map<std::string, View> views;
  for (const RankFlight& r : reports) {
    who[r.rank] = &r;
    if (!r.fr) {
      c.no_record.emplace_back(r.rank, r.why_none.empty() ? "no record" : r.why_none);
      continue;
    }
    if (!r.fr->no_stacks.empty()) c.no_stacks.emplace_back(r.rank, r.fr->no_stacks);
    for (const FrGroup& g : r.fr->groups) {
      auto [it, fresh] = views.try_emplace(g.pg);
      if (fresh) order.push_back(g.pg);
      View& v = it->second;
      v.pg = g.pg;
      if (v.desc.empty()) v.desc = g.desc;
      if (v.ranks.empty()) v.ranks = g.ranks;
      v.by_rank[r.rank] = &g;
    }
  }
  std::sort(c.no_record.begin(), c.no_record.end());
  std::sort(c.no_stacks.begin(), c.no_stacks.end());
  std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;  // "2" before "10"
  });
  auto culprit_rank = [&](int rank, const FrOp* last) {
    CulpritRank cr;
    cr.rank = rank;
    if (auto it = who.find(rank); it != who.end()) {
      cr.node = it->second->node;
      cr.shim = it->second->shim;
      cr.host = it->second->host;
    }
    if (last) cr.last = *last;
    return cr;
  };
  // Each group's gap: the first collective not every rank that reported it
  // entered, who did not, and who did (and waits).
  struct Gap {
    std::string pg;
    int64_t seq = 0;
    std::vector<int> missing, entered;
  };
  std::vector<Gap> gaps;
  std::set<int> blocked;  // entered some group's gap collective: waiting
  for (const std::string& pg : order) {
    const View& v = views[pg];
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& [rank, g] : v.by_rank) {
      lo = std::min(lo, g->enqueued);
      hi = std::max(hi, g->enqueued);
    }
    if (lo == hi) continue;
    Gap gap;
    gap.pg = pg;
    gap.seq = lo + 1;
    for (const auto& [rank, g] : v.by_rank)
      (g->enqueued < gap.seq ? gap.missing : gap.entered).push_back(rank);
    for (int r : gap.entered) blocked.insert(r);
    gaps.push_back(std::move(gap));
  }
  auto fill = [&](const View& v, int64_t seq, const std::vector<int>& missing,
                  const std::vector<int>& entered) {
    c.found = true;
    c.pg = v.pg;
    c.desc = v.desc;
    c.group_ranks = v.ranks;
    c.op.seq = seq;
    for (int r : entered)
      if (const FrOp* op = OpAt(*v.by_rank.at(r), seq)) {
        c.op = *op;
        break;
      }
    c.waiting = entered;
    for (int r : missing) {
      auto it = v.by_rank.find(r);
      c.missing.push_back(culprit_rank(r, it == v.by_rank.end() ? nullptr : &it->second->last));
    }
  };
  // The culprits of a gap are its missing ranks that wait nowhere else;
  // a gap whose missing ranks all wait elsewhere is a victim's.
  const Gap* chosen = nullptr;
  std::vector<int> culprits;
  for (const Gap& g : gaps) {
    std::vector<int> free;
    for (int r : g.missing)
      if (!blocked.count(r)) free.push_back(r);
    if (!free.empty()) {
      chosen = &g;
      culprits = std::move(free);
      break;
    }
  }
  if (!chosen && !gaps.empty()) {
    // A cycle: every missing rank waits in another group's gap. The ranks
    // that went another way than their group's others are the fewer: the
    // gap with the fewest missing (the first of equals).
    chosen = &gaps[0];
    for (const Gap& g : gaps)
      if (g.missing.size() < chosen->missing.size()) chosen = &g;
    culprits = chosen->missing;
  }
  // Mismatches: ranks of one group at one sequence number in different ops.
  for (const std::string& pg : order) {
    const View& v = views[pg];
    std::map<int64_t, std::map<std::string, std::vector<int>>> at;
    for (const auto& [rank, g] : v.by_rank)
      for (const FrOp* op : {&g->last, &g->pending})
        if (op->seq >= 0) at[op->seq][Variant(*op)].push_back(rank);
    for (auto& [seq, variants] : at) {
      if (variants.size() < 2) continue;
      Mismatch m;
      m.seq = seq;
      for (auto& [text, ranks] : variants) {
        std::sort(ranks.begin(), ranks.end());
        ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
        m.variants.emplace_back(text, ranks);
      }
      std::stable_sort(m.variants.begin(), m.variants.end(),
                       [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
      c.mismatches.push_back(std::move(m));
      if (!chosen && !c.found) {
        // The fewer ranks in another collective are the culprits.
        const auto& major = c.mismatches.back().variants[0].second;
        std::vector<int> minor;
        for (size_t k = 1; k < c.mismatches.back().variants.size(); ++k)
          for (int r : c.mismatches.back().variants[k].second) minor.push_back(r);
        std::sort(minor.begin(), minor.end());
        fill(v, seq, {}, major);
        for (int r : minor) c.missing.push_back(culprit_rank(r, OpAt(*v.by_rank.at(r), seq)));
      }
    }
  }
  if (chosen) {
    const View& v = views[chosen->pg];
    fill(v, chosen->seq, culprits, chosen->entered);
  } else if (!c.found) {
    // Every rank that answered entered each group's last collective. Ranks
    // of a group with no record are then its suspects.
    for (const std::string& pg : order) {
      const View& v = views[pg];
      auto members = ParseRankRanges(v.ranks, std::max(world, 1), static_cast<size_t>(world) + 1);
      if (!members.ok()) continue;
      std::vector<int> silent, entered;
      for (int r : *members)
        (v.by_rank.count(r) ? entered : silent).push_back(r);
      const int64_t seq = v.by_rank.begin()->second->enqueued;
      bool incomplete = true;
      for (const auto& [rank, g] : v.by_rank) incomplete = incomplete && g->completed < seq;
      if (silent.empty() || !incomplete || seq < 0) continue;
      fill(v, seq, {}, entered);
      for (int r : silent) c.missing.push_back(culprit_rank(r, nullptr));
      break;
    }
  }
  if (!c.found && !views.empty()) {
    c.all_entered = true;
    for (const std::string& pg : order) {
      const View& v = views[pg];
      const FrGroup& g = *v.by_rank.begin()->second;
      if (g.completed < g.enqueued) {
        c.stuck_pg = v.pg;
        c.stuck_desc = v.desc;
        c.stuck_op = g.last;
        break;
      }
    }
  }
  std::set<int> nodes;
  for (const CulpritRank& r : c.missing) nodes.insert(r.node);
  if (nodes.size() == 1 && *nodes.begin() >= 0) {
    c.node = *nodes.begin();
    c.shim = c.missing[0].shim;
    c.host = c.missing[0].host;
  }
  return c;
}

std::string CulpritLine(const Culprit& c) {
  std::string out;
  if (c.found) {
    std::vector<int> missing;
    for (const CulpritRank& r : c.missing) missing.push_back(r.rank);
    const bool one = missing.size() == 1;
    const bool mismatch = !c.missing.empty() && c.missing[0].last.seq == c.op.seq;
    out = "aml-shim: culprit: " + Ranks(missing) + " [" + WhereOf(c.missing) + "] ";
    if (mismatch) {
      out += (one ? "entered " : "entered ") + OpWords(c.missing[0].last) + " of " +
             Described(c.pg, c.desc) + " where " + Ranks(c.waiting) + " entered " + OpWords(c.op);
    } else {
      out += "never entered " + OpWords(c.op) + " of " + Described(c.pg, c.desc);
      if (!c.waiting.empty())
        out += ", which " + Ranks(c.waiting) + " entered and " +
               (c.waiting.size() == 1 ? "waits" : "wait") + " in";
      // Where the culprits are instead: their own last collective.
      std::map<std::string, std::vector<int>> lasts;
      for (const CulpritRank& r : c.missing)
        lasts[r.last.seq < 0 ? "no collective of the group on record"
                             : OpWords(r.last) + (r.last.frame.empty() ? "" : " at " +
                                                  EscapeControl(r.last.frame))]
            .push_back(r.rank);
      std::vector<std::string> parts;
      for (const auto& [text, ranks] : lasts)
        parts.push_back(lasts.size() == 1 ? text : Ranks(ranks) + ": " + text);
      out += "; " + std::string(one ? "its" : "their") + " last: " + JoinCapped(parts, 3);
    }
  } else if (c.all_entered && !c.stuck_pg.empty()) {
    out = "aml-shim: no culprit: every rank entered " + OpWords(c.stuck_op) + " of " +
          Described(c.stuck_pg, c.stuck_desc) +
          " and none completed it (the fault is between ranks, not one rank's)";
  } else if (c.all_entered) {
    out = "aml-shim: no culprit: every rank's last collective completed (the job is stuck "
          "outside collectives)";
  } else {
    out = "aml-shim: no culprit: no rank's flight record came";
  }
  out += Lacking("; no flight record from ", c.no_record);
  out += Lacking("; no stack traces from ", c.no_stacks);
  return out + "\n";
}

std::string CulpritJson(const Culprit& c) {
  JsonWriter j;
  j.BeginObject();
  j.Key("found").Bool(c.found);
  if (c.found) {
    j.Key("group").String(c.pg).Key("desc").String(c.desc).Key("group_ranks").String(c.group_ranks);
    j.Key("seq").Int(c.op.seq).Key("op").String(c.op.op).Key("sizes").String(c.op.sizes);
    j.Key("dtype").String(c.op.dtype);
    j.Key("missing").BeginArray();
    for (const CulpritRank& r : c.missing) {
      j.BeginObject().Key("rank").Int(r.rank).Key("node").Int(r.node).Key("host").String(r.host);
      j.Key("last_seq").Int(r.last.seq).Key("last_op").String(r.last.op);
      j.Key("frame").String(r.last.frame).EndObject();
    }
    j.EndArray();
    j.Key("waiting").String(FormatRanges(c.waiting));
  }
  if (c.node >= 0) j.Key("node").Int(c.node).Key("host").String(c.host).Key("shim").Int(c.shim);
  j.Key("mismatches").BeginArray();
  for (const Mismatch& m : c.mismatches) {
    j.BeginObject().Key("seq").Int(m.seq).Key("variants").BeginArray();
    for (const auto& [text, ranks] : m.variants)
      j.BeginObject().Key("op").String(text).Key("ranks").String(FormatRanges(ranks)).EndObject();
    j.EndArray().EndObject();
  }
  j.EndArray();
  for (const auto& [key, list] : {std::pair{"no_record", &c.no_record},
                                   std::pair{"no_stacks", &c.no_stacks}}) {
    j.Key(key).BeginArray();
    for (const auto& [rank, why] : *list)
      j.BeginObject().Key("rank").Int(rank).Key("why").String(why).EndObject();
    j.EndArray();
  }
  j.Key("verdict").String(CulpritLine(c).substr(10, CulpritLine(c).size() - 11));
  j.EndObject();
  return j.str();
}

}  // namespace aml
