#include "shim/cli/nearest_word.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(NearestWord, CountsEachKindOfSlipAsOneStep) {
  EXPECT_EQ(EditDistance("nproc-per-nod", "nproc-per-node", 3), 1u);     // a letter left out
  EXPECT_EQ(EditDistance("nprocs-per-node", "nproc-per-node", 3), 1u);   // one too many
  EXPECT_EQ(EditDistance("nproc-per-mode", "nproc-per-node", 3), 1u);    // one wrong
  EXPECT_EQ(EditDistance("nproc-pre-node", "nproc-per-node", 3), 1u);    // two swapped
  EXPECT_EQ(EditDistance("abc", "abc", 3), 0u);
  EXPECT_EQ(EditDistance("", "abcdefgh", 3), 4u);  // past the limit: limit + 1
  EXPECT_EQ(EditDistance("kitten", "sitting", 5), 3u);
}

TEST(NearestWord, SuggestsOnlyAClearlyNearestWord) {
  const std::vector<std::string> words = {"nproc-per-node", "max-restarts", "retire-slow",
                                          "retire-after", "spares", "verbose"};
  EXPECT_EQ(NearestWord("nproc-per-nod", words), "nproc-per-node");
  EXPECT_EQ(NearestWord("max-restart", words), "max-restarts");
  EXPECT_EQ(NearestWord("retire-slo", words), "retire-slow");
  EXPECT_EQ(NearestWord("spraes", words), "spares");
  // Too far from any: no guess.
  EXPECT_EQ(NearestWord("gpus", words), "");
  EXPECT_EQ(NearestWord("x", words), "");
  // Two equally near: no guess.
  EXPECT_EQ(NearestWord("ab", {"ac", "ad"}), "");
}

}  // namespace
}  // namespace aml
