#include "shim/rendezvous/pmi1_collective.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(ParseProcessMapping, PackedRoundRobinAndUnevenAsMpichReadsThem) {
  // Packed 2 + 2.
  EXPECT_EQ(*ParseProcessMapping("(vector,(0,2,2))", 4), (std::vector<int>{0, 0, 1, 1}));
  // Round robin: one rank per node, repeated.
  EXPECT_EQ(*ParseProcessMapping("(vector,(0,2,1))", 4), (std::vector<int>{0, 1, 0, 1}));
  // Uneven 3 + 1, and 2 + 1 + 1.
  EXPECT_EQ(*ParseProcessMapping("(vector,(0,1,3),(1,1,1))", 4), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(*ParseProcessMapping("(vector, (0,1,2), (1,2,1))", 4),
            (std::vector<int>{0, 0, 1, 2}));
}

TEST(ParseProcessMapping, AMalformedMappingIsNamed) {
  for (const char* bad : {"", "(vector)", "(vector,(0,2))", "(vector,(0,0,1))", "(list,(0,1,1))",
                          "(vector,(0,1,x))"}) {
    auto m = ParseProcessMapping(bad, 2);
    ASSERT_FALSE(m.ok()) << bad;
  }
  EXPECT_EQ(ParseProcessMapping("(vector,(0,2))", 2).error().message,
            "PMI_process_mapping='(vector,(0,2))' has a block of fewer than 3 numbers");
}

TEST(Pmi1Offered, NeedsTheDescriptorTheRankAndTheSize) {
  EXPECT_TRUE(Pmi1Offered(EnvSnapshot({{"PMI_FD", "9"}, {"PMI_RANK", "0"}, {"PMI_SIZE", "2"}})));
  EXPECT_FALSE(Pmi1Offered(EnvSnapshot({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}})));
}

}  // namespace
}  // namespace aml
