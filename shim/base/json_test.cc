#include "shim/base/json.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(Json, QuoteEscapes) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(JsonQuote("h\xc3\xa9"), "\"h\xc3\xa9\"");  // valid UTF-8 kept
  EXPECT_EQ(JsonQuote("\xff"), "\"\\u00ff\"");        // invalid byte escaped
}

// What strict readers refuse never goes out raw: each byte of an overlong
// form, a surrogate (a lone "\udcff" decoded from torch's error file) or a
// code point past U+10FFFF is written as \u00XX; valid sequences stay.
TEST(Json, QuoteWritesOnlyValidUtf8) {
  EXPECT_EQ(JsonQuote("\xc0\x80"), "\"\\u00c0\\u0080\"");               // overlong NUL
  EXPECT_EQ(JsonQuote("\xe0\x80\xaf"), "\"\\u00e0\\u0080\\u00af\"");    // overlong '/'
  EXPECT_EQ(JsonQuote("\xed\xb3\xbf"), "\"\\u00ed\\u00b3\\u00bf\"");    // U+DCFF
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), "\"\\u00f4\\u0090\\u0080\\u0080\"");  // > U+10FFFF
  EXPECT_EQ(JsonQuote("\xf5"), "\"\\u00f5\"");
  EXPECT_EQ(JsonQuote("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"),
            "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"");
}

TEST(Json, Writer) {
  JsonWriter j;
  j.BeginObject().Key("a").Int(1).Key("b").BeginArray().String("x").Bool(true).Null()
      .EndArray().Key("c").Number(2.5).EndObject();
  EXPECT_EQ(j.str(), "{\"a\":1,\"b\":[\"x\",true,null],\"c\":2.5}");
}

}  // namespace
}  // namespace aml
