#include "shim/base/range_list.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(RangeList, SplitsAsWrittenWithItsBoundsNumbers) {
  auto r = SplitRanges("001-004,7,12-13");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].lo, "001");
  EXPECT_EQ((*r)[0].hi, "004");
  EXPECT_EQ((*r)[0].first, 1u);
  EXPECT_EQ((*r)[0].last, 4u);
  EXPECT_EQ((*r)[1].lo, (*r)[1].hi);
  EXPECT_EQ((*r)[2].last, 13u);
}

TEST(RangeList, SaysWhichItemIsWrong) {
  EXPECT_EQ(SplitRanges("1,3-1").error().message, "a reversed range '3-1'");
  EXPECT_EQ(SplitRanges("x-2").error().message, "a malformed range 'x-2'");
  EXPECT_EQ(SplitRanges("").error().message, "a malformed range ''");
  EXPECT_EQ(SplitRanges("1,").error().message, "a malformed range ''");
  EXPECT_EQ(SplitRanges("1234567890123456789").error().message,
            "a malformed range '1234567890123456789'");
}

TEST(RangeList, ExpandsWithinItsLimitAndCountBeforeExpanding) {
  auto r = SplitRanges("0-2,8");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*ExpandRanges(*r, 9, 10, "CPU"), (std::vector<int>{0, 1, 2, 8}));
  EXPECT_EQ(ExpandRanges(*r, 8, 10, "CPU").error().message, "a CPU of 8, not below 8");
  EXPECT_EQ(ExpandRanges(*r, 9, 3, "CPU").error().message, "more than 3 CPUs");
  auto huge = SplitRanges("0-999999999999");
  ASSERT_TRUE(huge.ok());
  EXPECT_FALSE(ExpandRanges(*huge, int64_t{1} << 62, 2048, "rank").ok());
}

TEST(RangeList, FormatsSortedNumbersBack) {
  EXPECT_EQ(FormatRanges({}), "");
  EXPECT_EQ(FormatRanges({3}), "3");
  EXPECT_EQ(FormatRanges({0, 1, 2, 3, 8, 12, 13}), "0-3,8,12-13");
}

TEST(RangeList, ARankListRoundTrips) {
  auto back = ParseRankRanges(FormatRanges({0, 1, 2, 3, 8, 12, 13}), 100, 16);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (std::vector<int>{0, 1, 2, 3, 8, 12, 13}));
}

TEST(RangeList, ARankListRefusesWhatNoShimSends) {
  for (const char* bad : {"", ",", "1,", "3-1", "2,1", "1,1", "-1", "1-", "x", "5-100", "0-16"})
    EXPECT_FALSE(ParseRankRanges(bad, 100, 16).ok()) << bad;
  EXPECT_TRUE(ParseRankRanges("0-15", 100, 16).ok());
  // A huge range is refused before it is expanded.
  EXPECT_FALSE(ParseRankRanges("0-16777215", 1 << 24, 2048).ok());
  EXPECT_EQ(ParseRankRanges("2,1", 100, 16).error().message,
            "ranks '2,1' are not in increasing order");
}

}  // namespace
}  // namespace aml
