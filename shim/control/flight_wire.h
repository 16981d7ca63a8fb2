// A rank's flight record on the control plane's wire (its summary, bounded:
// launch/flight/fr_dump.h, or why there is none), written by the shim that
// read it and read back by rank 0's (the bytes come from another host): the
// roll-call's stacks and a failure's records carry them alike.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "launch/flight/fr_dump.h"
#include "shim/base/json.h"
#include "shim/control/wire.h"

namespace aml {

// Why a rank has no record, as far as the wire carries it.
inline constexpr size_t kMaxFrWhy = 300;

void SetFlight(Msg* one, const std::optional<FrSummary>& fr, const std::string& why);
void ReadFlight(const JsonValue& v, std::optional<FrSummary>* fr, std::string* why);
// This shim's own record, through the wire's encoding as every other
// shim's comes (so that rank 0 reads its own as it reads theirs).
std::optional<FrSummary> ThroughWire(const FrSummary& fr);

}  // namespace aml
