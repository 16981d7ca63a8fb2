#include "launch/line_tagger.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

std::string FeedAll(LineTagger& t, std::initializer_list<std::string_view> chunks) {
  std::string out;
  for (auto c : chunks) t.Feed(c, &out);
  return out;
}

TEST(LineTagger, WholeLinesAcrossChunks) {
  LineTagger t("[rank 3] ", 1024);
  EXPECT_EQ(FeedAll(t, {"hel", "lo\nwor", "ld\n", "x"}), "[rank 3] hello\n[rank 3] world\n");
  std::string out;
  t.Finish(&out);
  EXPECT_EQ(out, "[rank 3] x\n[rank 3]\\ no newline at end of output\n");
}

TEST(LineTagger, EndAfterWholeLinesAddsNothing) {
  LineTagger t("[rank 3] ", 1024);
  std::string out;
  t.Feed("a\n", &out);
  t.Finish(&out);
  EXPECT_EQ(out, "[rank 3] a\n");
}

TEST(LineTagger, EndAfterAFlushedPieceIsMarked) {
  LineTagger t("[rank 2] ", 100);
  std::string out;
  t.Feed("Epoch 1: ", &out);
  t.FlushPartial(&out);
  t.Finish(&out);
  EXPECT_EQ(out, "[rank 2] Epoch 1: \n[rank 2]\\ no newline at end of output\n");
}

TEST(LineTagger, CarriageReturnEndsAPiece) {
  LineTagger t("[rank 0] ", 1024);
  EXPECT_EQ(FeedAll(t, {" 10%|#\r 20%|##\r", "done\r\n"}),
            "[rank 0]  10%|#\r[rank 0]  20%|##\r[rank 0] done\r[rank 0] \n");
}

TEST(LineTagger, LongLineIsCutWithContinuation) {
  LineTagger t("[rank 1] ", 4);
  EXPECT_EQ(FeedAll(t, {"abcdefghij\n"}),
            "[rank 1] abcd\n[rank 1]+ efgh\n[rank 1]+ ij\n");
  EXPECT_EQ(FeedAll(t, {"ok\n"}), "[rank 1] ok\n");
}

TEST(LineTagger, FlushPartialThenContinue) {
  LineTagger t("[rank 2] ", 100);
  std::string out = FeedAll(t, {"Epoch 1: "});
  EXPECT_EQ(out, "");
  EXPECT_TRUE(t.has_partial());
  t.FlushPartial(&out);
  t.Feed("done\n", &out);
  EXPECT_EQ(out, "[rank 2] Epoch 1: \n[rank 2]+ done\n");
}

TEST(LineTagger, BytesPassUnchanged) {
  LineTagger t("[r] ", 1024);
  std::string bin("\x00\xff\x1b[31mred\x1b[0m\n", 15);
  std::string out;
  t.Feed(bin, &out);
  EXPECT_EQ(out, "[r] " + bin);
}

}  // namespace
}  // namespace aml
