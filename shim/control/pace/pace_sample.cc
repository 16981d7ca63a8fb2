#include "shim/control/pace/pace_sample.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "shim/base/json.h"

namespace aml {
namespace {

// The later of two entrants first; none (-1) is never later.
bool Later(const PaceEntrant& a, const PaceEntrant& b) {
  if (a.shim < 0) return false;
  if (b.shim < 0) return true;
  return a.t_us != b.t_us ? a.t_us > b.t_us : a.shim < b.shim;
}

// `into` takes `from`'s collectives: shims add up, the two latest stay.
void MergeOp(PaceOp* into, const PaceOp& from) {
  into->shims += from.shims;
  PaceEntrant e[4] = {into->last, into->next, from.last, from.next};
  std::sort(std::begin(e), std::end(e), Later);
  into->last = e[0];
  into->next = PaceEntrant();
  for (int k = 1; k < 4; ++k)
    if (e[k].shim >= 0 && e[k].shim != e[0].shim) {
      into->next = e[k];
      break;
    }
}

void Trim(PaceGroup* g) {
  if (g->ops.size() > kMaxPaceOps) g->ops.erase(g->ops.begin(), g->ops.end() - kMaxPaceOps);
}

int64_t Int(const JsonValue* v, int64_t lo, int64_t hi, bool* ok) {
  if (!v || v->kind != JsonValue::Kind::kNumber) {
    *ok = false;
    return 0;
  }
  char* end = nullptr;
  const long long n = std::strtoll(v->text.c_str(), &end, 10);
  if (!end || *end != '\0' || n < lo || n > hi) *ok = false;
  return n;
}

constexpr int64_t kMaxShim = int64_t{1} << 30;
constexpr int64_t kMaxSeq = int64_t{1} << 53;
constexpr int64_t kMaxUs = int64_t{1} << 56;

}  // namespace

PaceSample LocalPace(int shim, int64_t look, const std::vector<RankTimes>& ranks,
                     double offset_s, double bound_s) {
  PaceSample s;
  s.look = look;
  s.shims = 1;
  // Each group's collectives: seq -> (ranks that entered it, the last one).
  struct Seen {
    size_t ranks = 0;
    int rank = -1;
    int64_t t_ns = 0;
  };
  std::map<std::string, std::map<int64_t, Seen>> groups;
  std::map<std::string, size_t> members;
  for (const RankTimes& r : ranks) {
    for (const FrEntryTimes& g : r.groups) {
      ++members[g.pg];
      auto& ops = groups[g.pg];
      for (const auto& [seq, t] : g.ops) {
        Seen& e = ops[seq];
        ++e.ranks;
        if (e.rank < 0 || t > e.t_ns) {
          e.rank = r.rank;
          e.t_ns = t;
        }
      }
    }
  }
  const int64_t offset_us = std::llround(offset_s * 1e6);
  const int64_t bound_us = std::llround(std::ceil(std::max(0.0, bound_s) * 1e6));
  for (const auto& [pg, ops] : groups) {
    PaceGroup g;
    g.pg = pg;
    for (const auto& [seq, e] : ops) {
      if (e.ranks < members[pg]) continue;  // a rank of this node not there yet
      PaceOp op;
      op.seq = seq;
      op.shims = 1;
      op.last = PaceEntrant{shim, e.rank, e.t_ns / 1000 + offset_us, bound_us};
      g.ops.push_back(op);
    }
    Trim(&g);
    if (!g.ops.empty()) s.groups.push_back(std::move(g));
  }
  // The busiest groups first (then by name: the same choice on every node).
  std::stable_sort(s.groups.begin(), s.groups.end(), [](const PaceGroup& a, const PaceGroup& b) {
    return a.ops.size() > b.ops.size();
  });
  if (s.groups.size() > kMaxPaceGroups) s.groups.resize(kMaxPaceGroups);
  return s;
}

void MergePace(PaceSample* into, const PaceSample& from) {
  into->shims += from.shims;
  if (into->look < 0) into->look = from.look;
  for (const PaceGroup& fg : from.groups) {
    auto it = std::find_if(into->groups.begin(), into->groups.end(),
                           [&](const PaceGroup& g) { return g.pg == fg.pg; });
    if (it == into->groups.end()) {
      if (into->groups.size() >= kMaxPaceGroups) continue;
      into->groups.push_back(fg);
      continue;
    }
    std::vector<PaceOp> merged;
    merged.reserve(it->ops.size() + fg.ops.size());
    size_t a = 0, b = 0;
    while (a < it->ops.size() || b < fg.ops.size()) {
      if (b == fg.ops.size() || (a < it->ops.size() && it->ops[a].seq < fg.ops[b].seq)) {
        merged.push_back(it->ops[a++]);
      } else if (a == it->ops.size() || fg.ops[b].seq < it->ops[a].seq) {
        merged.push_back(fg.ops[b++]);
      } else {
        PaceOp op = it->ops[a++];
        MergeOp(&op, fg.ops[b++]);
        merged.push_back(op);
      }
    }
    it->ops = std::move(merged);
    Trim(&*it);
  }
}

std::string PaceJson(const PaceSample& s) {
  JsonWriter j;
  j.BeginObject();
  j.Key("look").Int(s.look).Key("shims").Int(s.shims).Key("g").BeginArray();
  for (const PaceGroup& g : s.groups) {
    j.BeginObject().Key("pg").String(g.pg).Key("o").BeginArray();
    for (const PaceOp& op : g.ops) {
      // [seq, shims, shim, rank, t, bound, (shim, rank, t, bound of the next)]
      j.BeginArray().Int(op.seq).Int(op.shims);
      for (const PaceEntrant* e : {&op.last, &op.next}) {
        if (e->shim < 0) break;
        j.Int(e->shim).Int(e->rank).Int(e->t_us).Int(e->bound_us);
      }
      j.EndArray();
    }
    j.EndArray().EndObject();
  }
  j.EndArray().EndObject();
  return j.str();
}

Result<PaceSample> PaceFrom(const JsonValue& v) {
  if (v.kind != JsonValue::Kind::kObject) return Error{"a look's sample that is not an object"};
  bool ok = true;
  PaceSample s;
  s.look = Int(v.Find("look"), 0, kMaxSeq, &ok);
  s.shims = static_cast<int>(Int(v.Find("shims"), 0, kMaxShim, &ok));
  const JsonValue* groups = v.Find("g");
  if (!ok || !groups || groups->kind != JsonValue::Kind::kArray ||
      groups->items.size() > kMaxPaceGroups)
    return Error{"a look's sample with a bad look, shims or groups"};
  for (const JsonValue& gv : groups->items) {
    const JsonValue* pg = gv.Find("pg");
    const JsonValue* ops = gv.Find("o");
    if (gv.kind != JsonValue::Kind::kObject || !pg || pg->kind != JsonValue::Kind::kString ||
        pg->text.size() > 64 || !ops || ops->kind != JsonValue::Kind::kArray ||
        ops->items.size() > kMaxPaceOps)
      return Error{"a look's sample with a bad group"};
    PaceGroup g;
    g.pg = pg->text;
    for (const JsonValue& ov : ops->items) {
      if (ov.kind != JsonValue::Kind::kArray || (ov.items.size() != 6 && ov.items.size() != 10))
        return Error{"a look's sample with a bad collective"};
      PaceOp op;
      op.seq = Int(&ov.items[0], 0, kMaxSeq, &ok);
      op.shims = static_cast<int>(Int(&ov.items[1], 1, kMaxShim, &ok));
      PaceEntrant* e[2] = {&op.last, &op.next};
      for (size_t k = 0; 2 + 4 * k < ov.items.size(); ++k) {
        e[k]->shim = static_cast<int>(Int(&ov.items[2 + 4 * k], 0, kMaxShim, &ok));
        e[k]->rank = static_cast<int>(Int(&ov.items[3 + 4 * k], 0, kMaxShim, &ok));
        e[k]->t_us = Int(&ov.items[4 + 4 * k], -kMaxUs, kMaxUs, &ok);
        e[k]->bound_us = Int(&ov.items[5 + 4 * k], 0, kMaxUs, &ok);
      }
      if (!ok || (!g.ops.empty() && op.seq <= g.ops.back().seq))
        return Error{"a look's sample with a bad collective"};
      g.ops.push_back(op);
    }
    s.groups.push_back(std::move(g));
  }
  return s;
}

}  // namespace aml
