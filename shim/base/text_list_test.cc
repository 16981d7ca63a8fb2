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

}  // namespace
}  // namespace aml
