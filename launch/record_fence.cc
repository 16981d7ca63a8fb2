// The fence on the job's record (record_fence.h).
#include "launch/record_fence.h"

#include <cstdlib>

#include "launch/failure_report.h"
#include "shim/base/json.h"
#include "shim/base/json_read.h"

namespace aml {

std::string Stamped(const std::string& object, const RecordStamp& stamp) {
  if (stamp.term <= 0) return object;
  std::string out = WithMember(object, "term", std::to_string(stamp.term));
  out = WithMember(out, "writer", JsonQuote(stamp.writer));
  return WithMember(out, "holder", stamp.holder ? "true" : "false");
}

RecordStamp StampOf(const std::string& record) {
  RecordStamp s;
  auto j = ParseJson(record);
  if (!j.ok()) return s;
  if (const JsonValue* t = j->Find("term"); t && t->kind == JsonValue::Kind::kNumber)
    s.term = std::atoi(t->text.c_str());
  if (const JsonValue* w = j->Find("writer"); w && w->kind == JsonValue::Kind::kString)
    s.writer = w->text;
  if (const JsonValue* h = j->Find("holder"); h && h->kind == JsonValue::Kind::kBool)
    s.holder = h->text == "true";
  return s;
}

bool MayReplace(const RecordStamp& stored, const RecordStamp& incoming) {
  if (incoming.holder) return !stored.holder || incoming.term >= stored.term;
  return !stored.holder && incoming.term > stored.term;
}

bool MayWrite(const std::string& stored, bool same_run, const RecordStamp& stamp) {
  return stored.empty() || !same_run || MayReplace(StampOf(stored), stamp);
}

std::string EndedWellJson(const std::string& run_id) {
  JsonWriter j;
  j.BeginObject();
  j.Key("run").String(run_id);
  j.Key("exit_code").Int(0);
  j.Key("outcome").String("the job ended well");
  j.EndObject();
  return j.str();
}

std::string NodeRecordName(int shim) {
  return "failure.shim-" + std::to_string(shim < 0 ? 0 : shim) + ".json";
}

}  // namespace aml
