#include "shim/control/pace/pace_sample.h"

#include <gtest/gtest.h>

#include "shim/control/pace/pace_test_util.h"
#include "shim/base/json_read.h"

namespace aml {
namespace {

TEST(PaceSample, ANodeEntersWhenItsLastRankDoesOnTheRootsClock) {
  RankTimes a{4, {{"0", {{10, 1'000'000'000}, {11, 2'000'000'000}, {12, 3'000'000'000}}}}};
  RankTimes b{5, {{"0", {{10, 1'500'000'000}, {11, 1'900'000'000}}}}};
  PaceSample s = LocalPace(2, 7, {a, b}, -0.25, 0.0015);
  EXPECT_EQ(s.look, 7);
  EXPECT_EQ(s.shims, 1);
  ASSERT_EQ(s.groups.size(), 1u);
  ASSERT_EQ(s.groups[0].ops.size(), 2u) << "12: rank 5 had not completed it";
  const PaceOp& op = s.groups[0].ops[0];
  EXPECT_EQ(op.seq, 10);
  EXPECT_EQ(op.last.shim, 2);
  EXPECT_EQ(op.last.rank, 5);
  EXPECT_EQ(op.last.t_us, 1'250'000);
  EXPECT_EQ(op.last.bound_us, 1500);
  EXPECT_EQ(s.groups[0].ops[1].last.rank, 4);
  EXPECT_EQ(op.next.shim, -1);
}

TEST(PaceSample, MergingKeepsTheTwoLatestShimsInAnyOrder) {
  auto enter = [](int shim, int, int64_t s) { return s + 0.01 * ((shim * 7) % 5); };
  auto none = [](int) { return 0.0; };
  PaceSample all = MakeLook(1, 5, 1, 100, 8, enter, none, 0.001);
  ASSERT_EQ(all.groups.size(), 1u);
  EXPECT_EQ(all.shims, 5);
  for (const PaceOp& op : all.groups[0].ops) {
    EXPECT_EQ(op.shims, 5);
    EXPECT_EQ(op.last.shim, 2);  // (2*7)%5 = 4: the latest
    EXPECT_EQ(op.next.shim, 4);  // (4*7)%5 = 3
  }
  // The other way round: the same.
  PaceSample back;
  for (int shim = 4; shim >= 0; --shim) {
    RankTimes r{shim, {{"0", {}}}};
    for (int64_t s = 100; s < 108; ++s)
      r.groups[0].ops.emplace_back(s, static_cast<int64_t>(enter(shim, 0, s) * 1e9));
    PaceSample part = LocalPace(shim, 1, {r}, 0, 0.001);
    if (shim == 4) back = part;
    else MergePace(&back, part);
  }
  EXPECT_EQ(PaceJson(back), PaceJson(all));
}

TEST(PaceSample, ItsBytesAreBoundedWhateverTheJobsSize) {
  auto enter = [](int shim, int, int64_t s) { return s * 0.1 + shim * 1e-6; };
  auto none = [](int) { return 0.0; };
  const size_t small = PaceJson(MakeLook(1, 2, 1, 0, 200, enter, none, 0)).size();
  const size_t large = PaceJson(MakeLook(1, 3000, 1, 0, 200, enter, none, 0)).size();
  EXPECT_LE(large, small + 64 * 16) << "only the shims' numbers grow, not their count";
  EXPECT_LT(large, size_t{8} << 10);
}

TEST(PaceSample, RoundTripsAndRefusesWhatIsBroken) {
  auto enter = [](int shim, int, int64_t s) { return 1.8e9 + s + shim * 0.01; };
  auto none = [](int) { return 0.0; };
  PaceSample s = MakeLook(3, 3, 1, 5, 4, enter, none, 0.002);
  auto v = ParseJson(PaceJson(s));
  ASSERT_TRUE(v.ok());
  auto back = PaceFrom(*v);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(PaceJson(*back), PaceJson(s));
  for (const char* bad : {R"({"look":1,"shims":1,"g":[{"pg":"0","o":[[5,1,0,0,1]]}]})",
                          R"({"look":1,"shims":1,"g":[{"pg":"0","o":[[6,1,0,0,1,0],[5,1,0,0,1,0]]}]})",
                          R"({"look":-4,"shims":1,"g":[]})",
                          R"({"look":1,"shims":1,"g":[{},{},{},{},{}]})", R"([1])"}) {
    auto bv = ParseJson(bad);
    ASSERT_TRUE(bv.ok()) << bad;
    EXPECT_FALSE(PaceFrom(*bv).ok()) << bad;
  }
}

}  // namespace
}  // namespace aml
