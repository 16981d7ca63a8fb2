#include "shim/world/spare_world.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

World Launched(int rank, int size, int local_size = 1) {
  World w;
  w.rank = {rank, "OMPI_COMM_WORLD_RANK=" + std::to_string(rank)};
  w.size = {size, "OMPI_COMM_WORLD_SIZE=" + std::to_string(size)};
  w.local_rank = {0, "OMPI_COMM_WORLD_LOCAL_RANK=0"};
  w.local_size = {local_size, "OMPI_COMM_WORLD_LOCAL_SIZE=" + std::to_string(local_size)};
  w.node_rank = {rank, "one rank per node"};
  w.node_count = {size, "one rank per node"};
  w.master_addr = {"gpu001", "rank 0's host"};
  return w;
}

TEST(SpareWorld, TheLastShimsAreSpares) {
  EXPECT_FALSE(IsSpare(Launched(2, 4), 1));
  EXPECT_TRUE(IsSpare(Launched(3, 4), 1));
  EXPECT_TRUE(IsSpare(Launched(2, 4), 2));
  EXPECT_FALSE(IsSpare(Launched(3, 4), 0));
}

TEST(SpareWorld, AHolderSeesTheNodesWithoutTheSpares) {
  World w = HolderWorld(Launched(3, 4), 1, 2);
  EXPECT_EQ(w.rank.value, 2);
  EXPECT_EQ(w.size.value, 3);
  EXPECT_EQ(w.node_rank.value, 2);
  EXPECT_EQ(w.node_count.value, 3);
  EXPECT_EQ(w.local_size.value, 1);
  EXPECT_EQ(w.master_addr.value, "gpu001");
  EXPECT_NE(w.size.why.find("OMPI_COMM_WORLD_SIZE=4"), std::string::npos) << w.size.why;
  EXPECT_FALSE(w.single_node);
}

TEST(SpareWorld, RefusesWhatCannotHaveSpares) {
  EXPECT_TRUE(CheckSpares(Launched(0, 4), 1).ok());
  EXPECT_TRUE(CheckSpares(Launched(0, 4, 2), 0).ok());
  auto two = CheckSpares(Launched(0, 4, 2), 1);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("OMPI_COMM_WORLD_LOCAL_SIZE=2"), std::string::npos);
  auto all = CheckSpares(Launched(0, 2), 2);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.error().message.find("--spares 2 leaves no node to run ranks"),
            std::string::npos)
      << all.error().message;
}

}  // namespace
}  // namespace aml
