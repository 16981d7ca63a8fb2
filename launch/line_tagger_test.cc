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

// Untagged (an empty prefix): lines go out whole, not a byte added.
TEST(LineTagger, UntaggedLinesGoOutWholeAsTheyAre) {
  LineTagger t("", 1024);
  // Python's print() under PYTHONUNBUFFERED=1: the text, then its '\n'.
  EXPECT_EQ(FeedAll(t, {"rank 0 loss 1.5", "\n"}), "rank 0 loss 1.5\n");
  EXPECT_EQ(FeedAll(t, {"a\nb\nc", "d\re", "f\n"}), "a\nb\ncd\ref\n");
  EXPECT_FALSE(t.has_partial());
}

TEST(LineTagger, UntaggedHeldPiecesGoOutAsTheyAre) {
  LineTagger t("", 4);
  std::string out = FeedAll(t, {"Password: "});
  EXPECT_EQ(out, "Password") << "pieces of the length limit";
  t.FlushPartial(&out);
  EXPECT_EQ(out, "Password: ") << "its deadline: no '\\n' added";
  t.Feed("x\ny", &out);
  t.Finish(&out);
  EXPECT_EQ(out, "Password: x\ny") << "the end: no mark";
  std::string bin("\x00\xff\x1b[31mred\x1b[0m\n", 15);
  LineTagger u("", 1024);
  std::string raw;
  u.Feed(bin, &raw);
  EXPECT_EQ(raw, bin);
}

TEST(LineTagger, UntaggedLinesReadGoOutWithoutACopyAndHeldOnesWithTheirEnd) {
  LineTagger t("", 1024);
  std::string first;
  const std::string data = "a\nb\nc";
  std::string_view head = t.TakeWhole(data, &first);
  EXPECT_EQ(first, "");
  EXPECT_EQ(head, "a\nb\n");
  EXPECT_EQ(head.data(), data.data()) << "a view of what was read";
  // The held "c" goes out with the rest of its line, in one write.
  head = t.TakeWhole("d\ne\nf", &first);
  EXPECT_EQ(first, "cd\n");
  EXPECT_EQ(head, "e\n");
  first.clear();
  // Over the length limit, what is held goes out after the lines.
  LineTagger u("", 4);
  head = u.TakeWhole("ab\ncdefgh", &first);
  EXPECT_EQ(first + std::string(head), "ab\ncdef");
  EXPECT_TRUE(u.has_partial());
}

}  // namespace
}  // namespace aml
