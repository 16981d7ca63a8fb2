// A failure's flight records (failure_records.h): what a shim sends, what
// rank 0's keeps: each shim's first frame, no rank 0 twice, none after a
// new attempt.
#include "shim/control/failure_records.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

RankRecord NoRecord(int rank, const std::string& why) {
  RankRecord r;
  r.rank = rank;
  r.fr_why = why;
  return r;
}

TEST(FailureRecords, EachShimsFirstFrameCountsAndItsRanksComeThrough) {
  FailureRecords in;
  in.Ask(true);
  in.Own(0, 0, "h0", {NoRecord(0, "it had ended")});
  const std::string frame =
      FailureRecords::Frame(2, 1, "h2", {NoRecord(4, "no pipe"), NoRecord(5, "no pipe")});
  in.FromShim(*Msg::Decode(frame), 4, 0);
  in.FromShim(*Msg::Decode(FailureRecords::Frame(2, 1, "h2", {NoRecord(9, "again")})), 4, 0);
  in.FromShim(*Msg::Decode(FailureRecords::Frame(0, 0, "h0", {NoRecord(8, "")})), 4, 0);
  in.FromShim(*Msg::Decode(FailureRecords::Frame(7, 3, "h7", {NoRecord(7, "")})), 4, 0);
  EXPECT_EQ(in.in(), (std::set<int>{0, 2})) << "shim 0's own and 2's, once; 7 is none of the 4";
  // Shim 2's second frame (rank 9's) was not kept: ranks 0, 4 and 5 have
  // no record, each saying why (the failed rank's own left out).
  const Waited w = in.WaitedFor(5);
  EXPECT_EQ(w.no_record, (std::vector<std::pair<int, std::string>>{{0, "it had ended"},
                                                                    {4, "no pipe"}}));
}

TEST(FailureRecords, ANewAttemptAsksNothingAndKeepsNothing) {
  FailureRecords in;
  in.Ask(true);
  in.Own(0, 0, "h0", {NoRecord(0, "")});
  in.Clear();
  EXPECT_FALSE(in.asked());
  EXPECT_TRUE(in.in().empty());
}

}  // namespace
}  // namespace aml
