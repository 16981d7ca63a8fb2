// Minimal JSON output: string escaping and a writer for flat objects/arrays.
#pragma once

#include <string>
#include <string_view>

namespace aml {

// `s` as a JSON string literal, quotes included. Bytes that are not valid
// UTF-8 are written as \u00XX so the output always parses.
std::string JsonQuote(std::string_view s);

// Builds one JSON value by appending keys and values in order.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Number(double value);
  JsonWriter& Int(long long value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // A value written already (by another JsonWriter), as it is.
  JsonWriter& Raw(std::string_view json);
  const std::string& str() const { return out_; }

 private:
  void Separate();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace aml
