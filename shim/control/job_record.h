// The root's record of the job, as the root hands it to its heir
// (docs/control-plane.md, "A new root"): every attempt so far, whole (not
// failure.json's capped list), written so that it reads back the same.
// The roster travels beside it (Roster::Save).
#pragma once

#include <string>
#include <vector>

#include "launch/restart_policy.h"
#include "shim/base/json_read.h"

namespace aml {

// A JSON array of the attempts, every field kept.
std::string SaveAttempts(const std::vector<AttemptRecord>& attempts);
// It read back: false (and `out` untouched) when `v` is not such an array.
bool LoadAttempts(const JsonValue& v, std::vector<AttemptRecord>* out);

// A JSON array of strings, and it read back ("" for an item that is no string).
std::string SaveStrings(const std::vector<std::string>& list);
std::vector<std::string> LoadStrings(const JsonValue* v);

}  // namespace aml
