#include "shim/base/json_read.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(ParseJson, TorchsErrorFile) {
  auto v = ParseJson(R"({"message": {"message": "ValueError: bad \"shard\"",
    "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"t.py\", line 3\nValueError: bad", "timestamp": "1700000000"}}})");
  ASSERT_TRUE(v.ok()) << v.error().message;
  const JsonValue* m = v->Find("message");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->Find("message")->text, "ValueError: bad \"shard\"");
  EXPECT_EQ(m->Find("extraInfo")->Find("py_callstack")->text,
            "Traceback (most recent call last):\n  File \"t.py\", line 3\nValueError: bad");
}

TEST(ParseJson, EscapesArraysAndScalars) {
  auto v = ParseJson(R"([1.5e3, -2, true, false, null, "\u00e9\ud83d\ude00\t"])");
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_EQ(v->items.size(), 6u);
  EXPECT_EQ(v->items[0].kind, JsonValue::Kind::kNumber);
  EXPECT_EQ(v->items[2].kind, JsonValue::Kind::kBool);
  EXPECT_EQ(v->items[4].kind, JsonValue::Kind::kNull);
  EXPECT_EQ(v->items[5].text, "\xc3\xa9\xf0\x9f\x98\x80\t");
}

TEST(ParseJson, ErrorsSayWhere) {
  EXPECT_EQ(ParseJson(R"({"a": )").error().message, "JSON: unexpected end at byte 6");
  EXPECT_EQ(ParseJson(R"({"a" 1})").error().message, "JSON: expected ':' at byte 5");
  EXPECT_EQ(ParseJson("[1] x").error().message, "JSON: unexpected text at byte 4");
  EXPECT_FALSE(ParseJson(std::string(100, '[')).ok());
}

}  // namespace
}  // namespace aml
