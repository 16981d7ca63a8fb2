#include "shim/control/tree_plan.h"

#include <gtest/gtest.h>

#include <map>

namespace aml {
namespace {

TEST(TreePlan, ShimsOfOneHostHangUnderItsFirst) {
  TreePlanner t(2, "h0", "10.0.0.1", 100);
  EXPECT_EQ(t.Assign(1, "h0", "10.0.0.1", 101).parent, 0);  // rank 0's host
  TreePlace a = t.Assign(2, "h1", "10.0.0.2", 102);          // h1's leader
  EXPECT_EQ(a.parent, 0);
  EXPECT_EQ(a.addr, "10.0.0.1");
  EXPECT_EQ(a.port, 100);
  TreePlace b = t.Assign(3, "h1", "10.0.0.2", 103);
  EXPECT_EQ(b.parent, 2);
  EXPECT_EQ(b.port, 102);
  EXPECT_EQ(b.depth, 2);
  // Asked again (a retried join): the same place.
  EXPECT_EQ(t.Assign(3, "h1", "10.0.0.2", 999).port, 102);
}

// 10,000 one-shim nodes under a fan-out of 32: nobody has more than 32
// children, and no message crosses more than 3 links.
TEST(TreePlan, TenThousandNodesStayShallowAndNarrow) {
  TreePlanner t(32, "h0", "a", 1);
  std::map<int, int> children;
  for (int r = 1; r < 10000; ++r) {
    TreePlace p = t.Assign(r, "h" + std::to_string(r), "a", 1 + r);
    ++children[p.parent];
    EXPECT_LT(p.parent, r);  // parents joined first: no cycle, no wait on a later shim
  }
  int widest = 0;
  for (const auto& [rank, n] : children) widest = std::max(widest, n);
  EXPECT_EQ(widest, 32);
  EXPECT_EQ(t.depth(), 3);
}

// Per-process launch: 10,000 shims on one node. Its shims chain into more
// leaders instead of one star: nobody holds more than 2 x 32 children.
TEST(TreePlan, ThousandsOfShimsOnOneNodeAreNoStar) {
  TreePlanner t(32, "n0", "a", 1);
  std::map<int, int> children;
  for (int r = 1; r < 10000; ++r) ++children[t.Assign(r, "n0", "a", 1 + r).parent];
  int widest = 0;
  for (const auto& [rank, n] : children) widest = std::max(widest, n);
  EXPECT_LE(widest, 64);
  EXPECT_LE(t.depth(), 4);
}

}  // namespace
}  // namespace aml
