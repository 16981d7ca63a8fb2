#include "launch/flight/fr_dump.h"

#include <algorithm>
#include <map>
#include <set>

#include "launch/flight/pickle.h"
#include "shim/base/json.h"
#include "shim/base/json_read.h"
#include "shim/base/log.h"
#include "shim/base/range_list.h"

namespace aml {
namespace {

constexpr size_t kMaxText = 160;  // any one string of the summary
constexpr int64_t kMaxRankNumber = int64_t{1} << 30;

// A string of the summary: printable ASCII only (a byte outside it, of a
// name in another script or of a broken dump, is '?': the summary is read
// on a terminal and crosses the wire as it was made), `n` bytes at most.
std::string Cap(std::string s, size_t n = kMaxText) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return s;
}

// A sequence number: -1 for none (or a negative one).
int64_t Seq(const PyObj* o) { return o && o->is(PyObj::Kind::kInt) && o->i >= 0 ? o->i : -1; }

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A value as Python's repr would show a nested list of sizes: "[[4, 8]]".
std::string Repr(const PyObj* o, int depth = 0) {
  if (!o || depth > 4) return "?";
  switch (o->kind) {
    case PyObj::Kind::kInt:
      return std::to_string(o->i);
    case PyObj::Kind::kStr:
      return "'" + o->s + "'";
    case PyObj::Kind::kList:
    case PyObj::Kind::kTuple: {
      std::string s = o->is(PyObj::Kind::kList) ? "[" : "(";
      for (size_t k = 0; k < o->items.size(); ++k) {
        if (k) s += ", ";
        if (s.size() > kMaxText) return Cap(s);
        s += Repr(o->items[k], depth + 1);
      }
      return s + (o->is(PyObj::Kind::kList) ? "]" : ")");
    }
    case PyObj::Kind::kNone:
      return "None";
    default:
      return "?";
  }
}

// The first frame outside torch itself: the user's call (innermost first).
std::string UserFrame(const PyObj* frames) {
  if (!frames || !frames->is(PyObj::Kind::kList)) return "";
  std::string first;
  for (const PyObj* f : frames->items) {
    const PyObj* file = f ? f->Get("filename") : nullptr;
    const PyObj* name = f ? f->Get("name") : nullptr;
    const PyObj* line = f ? f->Get("line") : nullptr;
    if (!file || !name) continue;
    const std::string path = file->Str();
    std::string text = name->Str() + " (" + BaseName(path) + ":" +
                       std::to_string(line ? line->Int(0) : 0) + ")";
    if (first.empty()) first = text;
    if (path.find("/torch/") == std::string::npos) return Cap(text);
  }
  return Cap(first);
}

// "nccl:all_reduce" -> "all_reduce".
std::string OpName(const std::string& profiling) {
  const size_t colon = profiling.find(':');
  return Cap(colon == std::string::npos ? profiling : profiling.substr(colon + 1), 64);
}

FrOp OpOf(const PyObj& e) {
  FrOp op;
  op.seq = Seq(e.Get("collective_seq_id"));
  op.op = OpName(e.Get("profiling_name") ? e.Get("profiling_name")->Str() : "");
  op.sizes = Cap(Repr(e.Get("input_sizes")), 96);
  if (const PyObj* d = e.Get("input_dtypes"); d && d->is(PyObj::Kind::kList) && !d->items.empty())
    op.dtype = Cap(d->items[0]->Str(), 32);
  op.state = Cap(e.Get("state") ? e.Get("state")->Str() : "", 32);
  op.frame = UserFrame(e.Get("frames"));
  return op;
}

// The group an entry belongs to: process_group's name, else pg_id.
std::string GroupOf(const PyObj& e) {
  if (const PyObj* pg = e.Get("process_group");
      pg && pg->is(PyObj::Kind::kTuple) && !pg->items.empty() && pg->items[0]->is(PyObj::Kind::kStr))
    return pg->items[0]->s;
  if (const PyObj* id = e.Get("pg_id"); id && id->is(PyObj::Kind::kInt)) return std::to_string(id->i);
  return "";
}

std::string DescOf(const PyObj& e) {
  if (const PyObj* pg = e.Get("process_group");
      pg && pg->is(PyObj::Kind::kTuple) && pg->items.size() > 1)
    return pg->items[1]->Str();
  return "";
}

// pg_config's "ranks": "[0, 1, 2]" (a string), compacted: "0-2".
std::string CompactOf(const std::string& listed) {
  std::vector<int> ranks;
  int64_t v = -1;
  for (char c : listed) {
    if (c >= '0' && c <= '9') {
      v = (v < 0 ? 0 : v) * 10 + (c - '0');
      if (v >= kMaxRankNumber) return "";
    } else if (v >= 0) {
      ranks.push_back(static_cast<int>(v));
      v = -1;
    }
  }
  if (v >= 0) ranks.push_back(static_cast<int>(v));
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks.empty() ? "" : FormatRanges(ranks);
}

void WriteOp(JsonWriter& j, const FrOp& op) {
  j.BeginObject();
  j.Key("seq").Int(op.seq).Key("op").String(op.op).Key("sizes").String(op.sizes);
  j.Key("dtype").String(op.dtype).Key("state").String(op.state).Key("frame").String(op.frame);
  j.EndObject();
}

std::string Text(const JsonValue* v, size_t cap = kMaxText) {
  return v && v->kind == JsonValue::Kind::kString ? Cap(v->text, cap) : "";
}

int64_t Number(const JsonValue* v) {
  if (!v || v->kind != JsonValue::Kind::kNumber) return -1;
  char* end = nullptr;
  const long long n = std::strtoll(v->text.c_str(), &end, 10);
  return end && *end == '\0' && n >= -1 ? n : -1;
}

FrOp ReadOp(const JsonValue* v) {
  FrOp op;
  if (!v || v->kind != JsonValue::Kind::kObject) return op;
  op.seq = Number(v->Find("seq"));
  op.op = Text(v->Find("op"), 64);
  op.sizes = Text(v->Find("sizes"), 96);
  op.dtype = Text(v->Find("dtype"), 32);
  op.state = Text(v->Find("state"), 32);
  op.frame = Text(v->Find("frame"));
  return op;
}

}  // namespace

Result<FrSummary> SummarizeDump(std::string_view dump, int rank,
                                std::vector<FrEntryTimes>* times) {
  PickleLimits limits;
  limits.max_bytes = kMaxFrDump;
  auto p = Pickle::Read(dump, limits);
  if (!p.ok()) return Error{"not a flight-recorder dump: " + p.error().message};
  const PyObj& d = p->root();
  if (!d.is(PyObj::Kind::kDict) || !d.Get("entries"))
    return Error{"not a flight-recorder dump: no \"entries\""};
  FrSummary s;
  s.rank = rank;
  s.version = Cap(d.Get("version") ? d.Get("version")->Str() : "", 16);
  // The groups: pg_status (the sequence numbers) by name, in the dump's order.
  std::map<std::string, size_t> index;
  const PyObj* status = d.Get("pg_status");
  if (status && status->is(PyObj::Kind::kDict)) {
    for (const auto& [key, value] : status->dict) {
      if (!key->is(PyObj::Kind::kStr) || index.count(key->s)) continue;
      if (s.groups.size() >= kMaxGroups) {
        ++s.more_groups;
        continue;
      }
      FrGroup g;
      g.pg = Cap(key->s, 64);
      if (value) {
        g.enqueued = Seq(value->Get("last_enqueued_collective"));
        g.started = Seq(value->Get("last_started_collective"));
        g.completed = Seq(value->Get("last_completed_collective"));
      }
      index[key->s] = s.groups.size();
      s.groups.push_back(std::move(g));
    }
  }
  // Each group's description and ranks. Gloo's dumps key the default group
  // '' in pg_config while its entries and pg_status say '0' (torch 2.14):
  // one '' group stands for the one group that has no config of its own.
  const PyObj* config = d.Get("pg_config");
  std::set<std::string> configured;
  const PyObj* blank = nullptr;
  if (config && config->is(PyObj::Kind::kDict)) {
    for (const auto& [key, value] : config->dict) {
      if (!key->is(PyObj::Kind::kStr) || !value) continue;
      if (key->s.empty()) blank = value;
      auto it = index.find(key->s);
      if (it == index.end()) continue;
      configured.insert(key->s);
      FrGroup& g = s.groups[it->second];
      g.desc = Cap(value->Get("desc") ? value->Get("desc")->Str() : "", 64);
      g.ranks = Cap(CompactOf(value->Get("ranks") ? value->Get("ranks")->Str() : ""), 1024);
    }
  }
  if (blank && s.groups.size() - configured.size() == 1) {
    for (FrGroup& g : s.groups) {
      if (configured.count(g.pg)) continue;
      g.ranks = Cap(CompactOf(blank->Get("ranks") ? blank->Get("ranks")->Str() : ""), 1024);
    }
  }
  // Two entries per group: the last it entered, the first it has not completed.
  const PyObj* entries = d.Get("entries");
  if (times) {
    times->assign(s.groups.size(), {});
    for (size_t k = 0; k < s.groups.size(); ++k) (*times)[k].pg = s.groups[k].pg;
  }
  if (entries->is(PyObj::Kind::kList)) {
    for (const PyObj* e : entries->items) {
      if (!e || !e->is(PyObj::Kind::kDict)) continue;
      if (const PyObj* p2p = e->Get("is_p2p"); p2p && p2p->is(PyObj::Kind::kBool) && p2p->b)
        continue;
      auto it = index.find(GroupOf(*e));
      if (it == index.end()) continue;
      FrGroup& g = s.groups[it->second];
      if (g.desc.empty()) g.desc = Cap(DescOf(*e), 64);
      const int64_t seq = Seq(e->Get("collective_seq_id"));
      if (seq < 0) continue;
      if (seq == g.enqueued) g.last = OpOf(*e);
      else if (seq == g.completed + 1) g.pending = OpOf(*e);
      const PyObj* created = e->Get("time_created_ns");
      if (times && seq <= g.completed && created && created->is(PyObj::Kind::kInt) &&
          created->i > 0) {
        auto& ops = (*times)[it->second].ops;
        // The recorder's ring holds them in order; one out of it is dropped.
        if (ops.empty() || ops.back().first < seq) ops.emplace_back(seq, created->i);
        if (ops.size() > 2 * kMaxTimedOps) ops.erase(ops.begin(), ops.end() - kMaxTimedOps);
      }
    }
  }
  if (times) {
    for (FrEntryTimes& t : *times)
      if (t.ops.size() > kMaxTimedOps) t.ops.erase(t.ops.begin(), t.ops.end() - kMaxTimedOps);
    times->erase(std::remove_if(times->begin(), times->end(),
                                [](const FrEntryTimes& t) { return t.ops.empty(); }),
                 times->end());
  }
  return s;
}

namespace {

std::string Encode(const FrSummary& s) {
  JsonWriter j;
  j.BeginObject();
  j.Key("rank").Int(s.rank).Key("version").String(s.version);
  j.Key("groups").BeginArray();
  for (const FrGroup& g : s.groups) {
    j.BeginObject();
    j.Key("pg").String(g.pg).Key("desc").String(g.desc).Key("ranks").String(g.ranks);
    j.Key("enqueued").Int(g.enqueued).Key("started").Int(g.started);
    j.Key("completed").Int(g.completed);
    j.Key("last");
    WriteOp(j, g.last);
    if (g.pending.seq >= 0) {
      j.Key("pending");
      WriteOp(j, g.pending);
    }
    j.EndObject();
  }
  j.EndArray();
  if (s.more_groups) j.Key("more_groups").Int(s.more_groups);
  if (!s.no_stacks.empty()) j.Key("no_stacks").String(s.no_stacks);
  j.EndObject();
  return j.str();
}

}  // namespace

std::string FrSummaryJson(const FrSummary& s, size_t max) {
  std::string json = Encode(s);
  if (json.size() <= max) return json;
  FrSummary fewer = s;
  while (json.size() > max && !fewer.groups.empty()) {
    fewer.groups.pop_back();
    ++fewer.more_groups;
    json = Encode(fewer);
  }
  return json;
}

Result<FrSummary> ParseFrSummary(std::string_view json) {
  if (json.size() > 64 << 10) return Error{"a flight-recorder summary of " +
                                           std::to_string(json.size()) + " bytes"};
  auto v = ParseJson(json);
  if (!v.ok()) return Error{"a flight-recorder summary that is not JSON: " + v.error().message};
  return FrSummaryFrom(*v);
}

Result<FrSummary> FrSummaryFrom(const JsonValue& value) {
  const JsonValue* v = &value;
  if (v->kind != JsonValue::Kind::kObject) return Error{"a flight-recorder summary not an object"};
  FrSummary s;
  s.rank = static_cast<int>(std::min<int64_t>(Number(v->Find("rank")), kMaxRankNumber));
  s.version = Text(v->Find("version"), 16);
  if (const JsonValue* groups = v->Find("groups");
      groups && groups->kind == JsonValue::Kind::kArray) {
    for (const JsonValue& gv : groups->items) {
      if (gv.kind != JsonValue::Kind::kObject) continue;
      if (s.groups.size() >= kMaxGroups) {
        ++s.more_groups;
        continue;
      }
      FrGroup g;
      g.pg = Text(gv.Find("pg"), 64);
      g.desc = Text(gv.Find("desc"), 64);
      g.ranks = Text(gv.Find("ranks"), 1024);
      g.enqueued = Number(gv.Find("enqueued"));
      g.started = Number(gv.Find("started"));
      g.completed = Number(gv.Find("completed"));
      g.last = ReadOp(gv.Find("last"));
      g.pending = ReadOp(gv.Find("pending"));
      s.groups.push_back(std::move(g));
    }
  }
  s.more_groups += static_cast<int>(std::clamp<int64_t>(Number(v->Find("more_groups")), 0, 1 << 20));
  s.no_stacks = Text(v->Find("no_stacks"), kMaxNoStacks);
  return s;
}

std::string FrOpWords(const FrOp& op) {
  std::string s = (op.op.empty() ? "collective" : EscapeControl(op.op)) + " #" +
                  std::to_string(op.seq);
  if (!op.sizes.empty() && op.sizes != "?") s += " " + EscapeControl(op.sizes);
  if (!op.dtype.empty()) s += " " + EscapeControl(op.dtype);
  return s;
}

std::string FrGroupWords(const std::string& pg, const std::string& desc) {
  return "group " + EscapeControl(pg) + (desc.empty() ? "" : " (" + EscapeControl(desc) + ")");
}

}  // namespace aml
