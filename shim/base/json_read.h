// Reading JSON that another program wrote (torch's error file): objects,
// arrays, strings with every escape, and scalars kept as their text. Depth
// and size are bounded by the caller's input; errors say where.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shim/base/result.h"

namespace aml {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  std::string text;  // a string's value, or a scalar's literal
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;

  // The member `key` of an object, or null.
  const JsonValue* Find(const std::string& key) const;
};

Result<JsonValue> ParseJson(std::string_view text);

}  // namespace aml
