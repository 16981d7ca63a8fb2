#include "shim/base/text_list.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(TextList, LinesRoundTrip) {
  EXPECT_EQ(SplitLines("a\nb\n\nc"), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(JoinLines({"a", "b"}), "a\nb");
  EXPECT_TRUE(SplitLines("").empty());
}

TEST(TextList, FieldsKeepTheEmptyOnes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SplitFields("torch,,numpy", ','), (V{"torch", "", "numpy"}));
  EXPECT_EQ(SplitFields("torch", ','), (V{"torch"}));
  EXPECT_EQ(SplitFields("", ','), (V{""}));
  EXPECT_EQ(SplitFields("a,", ','), (V{"a", ""}));
}

TEST(TextList, NamesTheFirstFewAndCountsTheRest) {
  EXPECT_EQ(JoinCapped({"a", "b", "c"}, 2, ",", " hosts"), "a,b and 1 more hosts");
  EXPECT_EQ(JoinCapped({"a", "b"}, 2), "a, b");
  EXPECT_EQ(RankList({3}), "rank 3");
  EXPECT_EQ(RankList({1, 2, 5, 6}, 3), "ranks 1, 2, 5 and 1 more");
}

TEST(TextList, CompactRanksRoundTrip) {
  EXPECT_EQ(CompactRanks({3}), "3");
  EXPECT_EQ(CompactRanks({0, 1, 2, 3, 8, 12, 13}), "0-3,8,12-13");
  auto back = ParseCompactRanks("0-3,8,12-13", 100, 16);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (std::vector<int>{0, 1, 2, 3, 8, 12, 13}));
}

TEST(TextList, CompactRanksRefusesWhatNoShimSends) {
  for (const char* bad : {"", ",", "1,", "3-1", "2,1", "1,1", "-1", "1-", "x", "5-100", "0-16"})
    EXPECT_FALSE(ParseCompactRanks(bad, 100, 16).ok()) << bad;
  EXPECT_TRUE(ParseCompactRanks("0-15", 100, 16).ok());
  // A huge range is refused before it is expanded.
  EXPECT_FALSE(ParseCompactRanks("0-16777215", 1 << 24, 2048).ok());
}

}  // namespace
}  // namespace aml
