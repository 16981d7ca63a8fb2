#include "shim/base/json.h"

#include <cmath>
#include <cstdio>

namespace aml {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0. Valid as RFC 3629 has
// it: no overlong form (C0, C1, E0 80..9F, F0 80..8F), no surrogate
// (ED A0..BF: a lone "\udcff" that torch's error file may hold), nothing
// past U+10FFFF (F4 90.., F5..FF); strict JSON readers reject all of these.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  if (n == 0 || i + n > s.size()) return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((at(k) >> 6) != 2) return 0;
  return n;
}

}  // namespace

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    char buf[8];
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    size_t n = c < 0x20 || c == 0x7f ? 0 : Utf8Length(s, i);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out + "\"";
}

void JsonWriter::Separate() {
  if (need_comma_) out_ += ',';
  need_comma_ = true;
}
JsonWriter& JsonWriter::BeginObject() { Separate(); out_ += '{'; need_comma_ = false; return *this; }
JsonWriter& JsonWriter::EndObject() { out_ += '}'; need_comma_ = true; return *this; }
JsonWriter& JsonWriter::BeginArray() { Separate(); out_ += '['; need_comma_ = false; return *this; }
JsonWriter& JsonWriter::EndArray() { out_ += ']'; need_comma_ = true; return *this; }
JsonWriter& JsonWriter::Key(std::string_view key) {
  Separate();
  out_ += JsonQuote(key);
  out_ += ':';
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::String(std::string_view v) { Separate(); out_ += JsonQuote(v); return *this; }
JsonWriter& JsonWriter::Raw(std::string_view json) { Separate(); out_ += json; return *this; }
JsonWriter& JsonWriter::Number(double v) {
  Separate();
  if (!std::isfinite(v)) { out_ += "null"; return *this; }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  out_ += buf;
  return *this;
}
JsonWriter& JsonWriter::Int(long long v) { Separate(); out_ += std::to_string(v); return *this; }
JsonWriter& JsonWriter::Bool(bool v) { Separate(); out_ += v ? "true" : "false"; return *this; }
JsonWriter& JsonWriter::Null() { Separate(); out_ += "null"; return *this; }

}  // namespace aml
