#include "shim/rendezvous/pmix_collective.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(NodesByLowestRank, PackedRoundRobinAndUnevenPlacements) {
  int count = 0;
  // Packed 2+2, the launcher numbering the nodes 1 and 2 (0: mpirun's host).
  EXPECT_EQ(NodesByLowestRank({1, 1, 2, 2}, &count), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(count, 2);
  // Round robin over nodes the launcher numbers in reverse.
  EXPECT_EQ(NodesByLowestRank({7, 3, 7, 3}, &count), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(count, 2);
  // Uneven 3+1, the lone rank last.
  EXPECT_EQ(NodesByLowestRank({0, 0, 0, 5}, &count), (std::vector<int>{0, 0, 0, 1}));
  // Three nodes, the one with rank 1 second though its id is the highest.
  EXPECT_EQ(NodesByLowestRank({2, 9, 4, 2, 9}, &count), (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_EQ(count, 3);
}

}  // namespace
}  // namespace aml
