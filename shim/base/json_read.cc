#include "shim/base/json_read.h"

#include <cstdint>

namespace aml {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Result<JsonValue> Document() {
    JsonValue v;
    if (!Value(&v, 0)) return Fail();
    Space();
    if (i_ != s_.size()) return Error{"JSON: unexpected text at byte " + std::to_string(i_)};
    return v;
  }

 private:
  Error Fail() const { return Error{"JSON: " + why_ + " at byte " + std::to_string(i_)}; }
  bool Bad(const char* why) {
    if (why_.empty()) why_ = why;
    return false;
  }
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  bool Value(JsonValue* v, int depth) {
    if (depth > kMaxDepth) return Bad("nested too deep");
    Space();
    if (i_ >= s_.size()) return Bad("unexpected end");
    const char c = s_[i_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v->kind = JsonValue::Kind::kString;
      return String(&v->text);
    }
    return Scalar(v);
  }

  bool Object(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kObject;
    ++i_;
    if (Eat('}')) return true;
    do {
      Space();
      std::string key;
      if (i_ >= s_.size() || s_[i_] != '"' || !String(&key)) return Bad("expected a key");
      if (!Eat(':')) return Bad("expected ':'");
      if (!Value(&v->members[key], depth + 1)) return false;
    } while (Eat(','));
    return Eat('}') || Bad("expected '}'");
  }

  bool Array(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kArray;
    ++i_;
    if (Eat(']')) return true;
    do {
      v->items.emplace_back();
      if (!Value(&v->items.back(), depth + 1)) return false;
    } while (Eat(','));
    return Eat(']') || Bad("expected ']'");
  }

  bool Scalar(JsonValue* v) {
    size_t start = i_;
    while (i_ < s_.size() && std::string_view("+-.0123456789eEtruefalsn").find(s_[i_]) !=
                                 std::string_view::npos)
      ++i_;
    v->text = std::string(s_.substr(start, i_ - start));
    if (v->text == "null") v->kind = JsonValue::Kind::kNull;
    else if (v->text == "true" || v->text == "false") v->kind = JsonValue::Kind::kBool;
    else if (!v->text.empty() && v->text.find_first_of("0123456789") != std::string::npos &&
             v->text.find_first_of("trufals") == std::string::npos)
      v->kind = JsonValue::Kind::kNumber;
    else return Bad("not a JSON value");
    return true;
  }

  static void Utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  bool Hex4(uint32_t* out) {
    if (i_ + 4 > s_.size()) return Bad("short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<uint32_t>(h - 'A' + 10);
      else return Bad("bad \\u escape");
    }
    *out = v;
    return true;
  }

  bool String(std::string* out) {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case 'r': out->push_back('\r'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00 && i_ + 1 < s_.size() && s_[i_] == '\\' &&
              s_[i_ + 1] == 'u') {
            i_ += 2;
            uint32_t lo = 0;
            if (!Hex4(&lo)) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          Utf8(cp, out);
          break;
        }
        default: out->push_back(e);  // \" \\ \/
      }
    }
    return Bad("unterminated string");
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string why_;
};

}  // namespace

const JsonValue* JsonValue::Find(const std::string& key) const {
  auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

Result<JsonValue> ParseJson(std::string_view text) { return Parser(text).Document(); }

}  // namespace aml
