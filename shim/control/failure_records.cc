#include "shim/control/failure_records.h"

#include <cstdlib>
#include <utility>

#include "shim/control/flight_wire.h"

namespace aml {

std::string FailureRecords::Frame(int shim, int node, const std::string& host,
                                  const std::vector<RankRecord>& records) {
  std::string list = "[";
  for (const RankRecord& r : records) {
    Msg one("r");
    one.Set("rank", r.rank);
    SetFlight(&one, r.fr, r.fr_why);
    list += (list.size() > 1 ? "," : "") + one.Encode();
  }
  list += "]";
  return Msg("records").Set("shim", shim).Set("node", node).Set("host", host).SetRaw("ranks", list)
      .Encode();
}

void FailureRecords::Own(int shim, int node, const std::string& host,
                         const std::vector<RankRecord>& records) {
  for (const RankRecord& r : records) {
    RankFlight f;
    f.rank = r.rank;
    f.node = node;
    f.shim = shim;
    f.host = host;
    if (r.fr) f.fr = ThroughWire(*r.fr);
    f.why_none = r.fr_why.substr(0, kMaxFrWhy);
    records_.push_back(std::move(f));
  }
  in_.insert(shim);
}

void FailureRecords::FromShim(const Msg& m, int size, int own) {
  const int shim = static_cast<int>(m.Int("shim", -1));
  if (shim < 0 || shim == own || shim >= size || in_.count(shim)) return;
  in_.insert(shim);
  const JsonValue* list = m.Raw("ranks");
  if (!list || list->kind != JsonValue::Kind::kArray) return;
  for (const JsonValue& v : list->items) {
    const JsonValue* r = v.Find("rank");
    if (!r || r->kind != JsonValue::Kind::kNumber || records_.size() >= kMaxRecords) continue;
    RankFlight f;
    f.rank = std::atoi(r->text.c_str());
    f.node = static_cast<int>(m.Int("node"));
    f.shim = shim;
    f.host = m.Str("host");
    ReadFlight(v, &f.fr, &f.why_none);
    records_.push_back(std::move(f));
  }
}

void FailureRecords::Clear() {
  asked_ = false;
  records_.clear();
  in_.clear();
}

}  // namespace aml
