#include "shim/base/json.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(Json, QuoteEscapes) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(JsonQuote("h\xc3\xa9"), "\"h\xc3\xa9\"");  // valid UTF-8 kept
  EXPECT_EQ(JsonQuote("\xff"), "\"\\u00ff\"");        // invalid byte escaped
}

TEST(Json, Writer) {
  JsonWriter j;
  j.BeginObject().Key("a").Int(1).Key("b").BeginArray().String("x").Bool(true).Null()
      .EndArray().Key("c").Number(2.5).EndObject();
  EXPECT_EQ(j.str(), "{\"a\":1,\"b\":[\"x\",true,null],\"c\":2.5}");
}

}  // namespace
}  // namespace aml
