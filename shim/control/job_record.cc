#include "shim/control/job_record.h"

#include <cstdlib>

#include "shim/base/json.h"
#include "shim/base/units.h"

namespace aml {
namespace {

double Num(const JsonValue& o, const char* key) {
  const JsonValue* v = o.Find(key);
  return v && v->kind == JsonValue::Kind::kNumber ? std::strtod(v->text.c_str(), nullptr) : 0;
}

bool Flag(const JsonValue& o, const char* key) {
  const JsonValue* v = o.Find(key);
  return v && v->kind == JsonValue::Kind::kBool && v->text == "true";
}

}  // namespace

std::string SaveStrings(const std::vector<std::string>& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) out += (i ? "," : "") + JsonQuote(list[i]);
  return out + "]";
}

std::vector<std::string> LoadStrings(const JsonValue* v) {
  std::vector<std::string> out;
  if (!v || v->kind != JsonValue::Kind::kArray) return out;
  for (const JsonValue& s : v->items)
    out.push_back(s.kind == JsonValue::Kind::kString ? s.text : "");
  return out;
}

std::string SaveAttempts(const std::vector<AttemptRecord>& attempts) {
  std::string out = "[";
  for (const AttemptRecord& a : attempts) {
    if (out.size() > 1) out += ",";
    out += "{\"n\":" + std::to_string(a.number) +
           ",\"d\":" + FormatNumber(a.duration_s, "%.6f") +
           ",\"code\":" + std::to_string(a.exit_code) + ",\"what\":" + JsonQuote(a.what) +
           ",\"rank\":" + std::to_string(a.rank) + ",\"hang\":" + (a.hang ? "true" : "false") +
           ",\"fw\":" + FormatNumber(a.failure_wall, "%.6f") +
           ",\"known\":" + (a.outputs_known ? "true" : "false") +
           ",\"out\":" + FormatNumber(a.first_output_wall, "%.6f") +
           ",\"well\":" + std::to_string(a.shims_ended_well) +
           ",\"moved\":" + (a.node_replaced ? "true" : "false") +
           ",\"ws\":" + std::to_string(a.warm_shims) + ",\"sw\":" + std::to_string(a.started_warm) +
           ",\"sc\":" + std::to_string(a.started_cold) +
           ",\"nodes\":" + SaveStrings(a.nodes) + "}";
  }
  return out + "]";
}

bool LoadAttempts(const JsonValue& v, std::vector<AttemptRecord>* out) {
  if (v.kind != JsonValue::Kind::kArray) return false;
  std::vector<AttemptRecord> list;
  for (const JsonValue& o : v.items) {
    if (o.kind != JsonValue::Kind::kObject || !o.Find("n")) return false;
    AttemptRecord a;
    a.number = static_cast<int>(Num(o, "n"));
    a.duration_s = Num(o, "d");
    a.exit_code = static_cast<int>(Num(o, "code"));
    const JsonValue* what = o.Find("what");
    a.what = what && what->kind == JsonValue::Kind::kString ? what->text : "";
    a.rank = static_cast<int>(Num(o, "rank"));
    a.hang = Flag(o, "hang");
    a.failure_wall = Num(o, "fw");
    a.outputs_known = Flag(o, "known");
    a.first_output_wall = Num(o, "out");
    a.shims_ended_well = static_cast<int>(Num(o, "well"));
    a.node_replaced = Flag(o, "moved");
    a.warm_shims = static_cast<int>(Num(o, "ws"));
    a.started_warm = static_cast<int>(Num(o, "sw"));
    a.started_cold = static_cast<int>(Num(o, "sc"));
    a.nodes = LoadStrings(o.Find("nodes"));
    list.push_back(std::move(a));
  }
  *out = std::move(list);
  return true;
}

}  // namespace aml
