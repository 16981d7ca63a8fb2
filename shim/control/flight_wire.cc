#include "shim/control/flight_wire.h"

#include <utility>

namespace aml {

void SetFlight(Msg* one, const std::optional<FrSummary>& fr, const std::string& why) {
  if (fr) one->SetRaw("fr", FrSummaryJson(*fr));
  else one->Set("frwhy", why.substr(0, kMaxFrWhy));
}

void ReadFlight(const JsonValue& v, std::optional<FrSummary>* fr, std::string* why) {
  if (const JsonValue* f = v.Find("fr")) {
    auto summary = FrSummaryFrom(*f);
    if (summary.ok()) *fr = std::move(*summary);
    else *why = summary.error().message;
  } else if (const JsonValue* w = v.Find("frwhy"); w && w->kind == JsonValue::Kind::kString) {
    *why = w->text.substr(0, kMaxFrWhy);
  }
}

std::optional<FrSummary> ThroughWire(const FrSummary& fr) {
  auto parsed = ParseFrSummary(FrSummaryJson(fr));
  if (!parsed.ok()) return std::nullopt;
  return std::move(*parsed);
}

}  // namespace aml
