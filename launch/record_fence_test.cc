#include "launch/record_fence.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

RecordStamp Holder(int term) { return {term, 0, "rank 0's shim on n1", true}; }
RecordStamp Part(int term) { return {term, 3, "rank 3's shim on n4", false}; }

TEST(RecordFence, AStampIsReadBackFromTheRecordItMarks) {
  const std::string r = Stamped("{\"run\":\"j\",\"exit_code\":125}", Part(3));
  EXPECT_EQ(r, "{\"run\":\"j\",\"exit_code\":125,\"term\":3,\"writer\":\"rank 3's shim on n4\","
               "\"holder\":false}");
  const RecordStamp s = StampOf(r);
  EXPECT_EQ(s.term, 3);
  EXPECT_EQ(s.writer, "rank 3's shim on n4");
  EXPECT_FALSE(s.holder);
  // A shim alone stamps nothing, and an unstamped record reads as a
  // holder's of term 0.
  EXPECT_EQ(Stamped("{\"run\":\"j\"}", RecordStamp{}), "{\"run\":\"j\"}");
  EXPECT_EQ(StampOf("{\"run\":\"j\"}").term, 0);
  EXPECT_TRUE(StampOf("{\"run\":\"j\"}").holder);
  EXPECT_EQ(StampOf("not json").term, 0);
}

TEST(RecordFence, AHoldersWordReplacesOlderTermsAndPartsNeverANewerTerm) {
  EXPECT_TRUE(MayReplace(Holder(1), Holder(1)));   // the root's later word
  EXPECT_TRUE(MayReplace(Holder(1), Holder(2)));   // a new root's
  EXPECT_FALSE(MayReplace(Holder(2), Holder(1)));  // an old root's: fenced
  EXPECT_TRUE(MayReplace(Part(5), Holder(1)));     // a part's never stands over a holder's
  EXPECT_FALSE(MayReplace(Holder(1), Part(1)));
  EXPECT_FALSE(MayReplace(Holder(1), Part(2)));
  EXPECT_FALSE(MayReplace(Part(1), Part(1)));      // among parts, the first
  EXPECT_TRUE(MayReplace(Part(1), Part(2)));       // unless of a newer term
}

TEST(RecordFence, ARecordOfAnotherRunOrNoneIsAlwaysReplaced) {
  const std::string stored = Stamped("{\"run\":\"old\"}", Holder(9));
  EXPECT_TRUE(MayWrite(stored, false, Part(1)));
  EXPECT_TRUE(MayWrite("", true, Part(1)));
  EXPECT_FALSE(MayWrite(stored, true, Holder(8)));
  EXPECT_TRUE(MayWrite(stored, true, Holder(9)));
}

TEST(RecordFence, TheEndedWellRecordIsTheJobsRootsWithAControlPlane) {
  EXPECT_TRUE(WritesEndedWell(Holder(1)));
  EXPECT_TRUE(WritesEndedWell(Holder(2)));
  EXPECT_FALSE(WritesEndedWell(Part(2)));
  EXPECT_FALSE(WritesEndedWell(RecordStamp{}));  // a shim alone
  EXPECT_EQ(EndedWellJson("j"), "{\"run\":\"j\",\"exit_code\":0,\"outcome\":\"the job ended well\"}");
  EXPECT_EQ(NodeRecordName(4), "failure.shim-4.json");
}

}  // namespace
}  // namespace aml
