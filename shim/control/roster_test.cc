#include "shim/control/roster.h"

#include <gtest/gtest.h>

#include "shim/base/json_read.h"

namespace aml {
namespace {

TEST(Roster, TheLastShimsAreSpares) {
  Roster r(5, 2);
  EXPECT_EQ(r.nodes(), 3);
  EXPECT_EQ(r.Holders(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(r.Spares(), (std::vector<int>{3, 4}));
  EXPECT_EQ(r.NodeOf(2), 2);
  EXPECT_EQ(r.NodeOf(3), -1);
  EXPECT_EQ(r.Encode(), "0-2");
}

TEST(Roster, ARetiredHolderIsReplacedByTheFirstSpareAndEveryOtherKeepsItsNode) {
  Roster r(5, 2);
  EXPECT_TRUE(r.Retire(1, "n1", "lost: silent", 1));
  EXPECT_EQ(r.Vacant(), 1);
  EXPECT_EQ(r.NodeOf(1), -1);
  ASSERT_TRUE(r.Fill());
  EXPECT_EQ(r.Encode(), "0,3,2");
  EXPECT_EQ(r.NodeOf(3), 1);
  EXPECT_EQ(r.Spares(), (std::vector<int>{4}));
  // Once only.
  EXPECT_FALSE(r.Retire(1, "n1", "again", 2));
  EXPECT_EQ(r.retirements().size(), 1u);
  EXPECT_EQ(r.retirements()[0].node, 1);
}

TEST(Roster, ARetiredSpareLeavesTheNodesAlone) {
  Roster r(4, 1);
  EXPECT_FALSE(r.Retire(3, "n3", "lost", 1));
  EXPECT_EQ(r.Vacant(), 0);
  EXPECT_TRUE(r.Spares().empty());
  EXPECT_EQ(r.retirements()[0].node, -1);
}

TEST(Roster, TooFewSparesLeaveTheRosterUnchanged) {
  Roster r(4, 1);
  r.Retire(0, "n0", "a", 1);
  r.Retire(2, "n2", "b", 1);
  EXPECT_FALSE(r.Fill());
  EXPECT_EQ(r.Encode(), "-1,1,-1");
  EXPECT_EQ(r.Spares(), (std::vector<int>{3}));
}

TEST(Roster, NodeZeroMovesToASpare) {
  Roster r(3, 1);
  r.Retire(0, "n0", "failed first twice", 2);
  ASSERT_TRUE(r.Fill());
  EXPECT_EQ(r.HolderOf(0), 2);
  EXPECT_EQ(Roster::NodeIn(r.Encode(), 2), 0);
  EXPECT_EQ(Roster::NodeIn(r.Encode(), 0), -1);
}

TEST(Roster, StreaksCountAttemptsInARowOnOneShim) {
  Roster r(4, 1);
  EXPECT_EQ(r.NoteFirstFailure(2), 1);
  EXPECT_EQ(r.NoteFirstFailure(2), 2);
  EXPECT_EQ(r.NoteFirstFailure(1), 1);  // another node: the streak starts again
  EXPECT_EQ(r.Streak(2), 0);
  EXPECT_EQ(r.NoteFirstFailure(1), 2);
  EXPECT_EQ(r.NoteFirstFailure(-1), 0);  // a hang, a loss, the script's own
  EXPECT_EQ(r.NoteFirstFailure(1), 1);
}

TEST(Roster, RunsKeepTheListShort) {
  Roster r(100000, 1);  // 99,999 NODE_RANKs and one spare
  EXPECT_EQ(r.Encode(), "0-99998");
  r.Retire(134, "n134", "lost", 1);
  ASSERT_TRUE(r.Fill());
  EXPECT_EQ(r.Encode(), "0-133,99999,135-99998");
  EXPECT_EQ(Roster::NodeIn(r.Encode(), 99999), 134);
  EXPECT_EQ(Roster::NodeIn(r.Encode(), 135), 135);
  EXPECT_EQ(Roster::NodeIn(r.Encode(), 134), -1);
  const std::vector<int> list = Roster::Decode(r.Encode());
  ASSERT_EQ(list.size(), 99999u);
  EXPECT_EQ(list[134], 99999);
  EXPECT_EQ(list[99998], 99998);
  EXPECT_EQ(Roster::Decode("3-5,-1,0"), (std::vector<int>{3, 4, 5, -1, 0}));
  EXPECT_TRUE(Roster::Decode("5-3").empty());           // backwards
  EXPECT_TRUE(Roster::Decode("0-99999999").empty());    // beyond 2^24 NODE_RANKs
  EXPECT_TRUE(Roster::Decode("1-").empty());
  EXPECT_TRUE(Roster::Decode("-2").empty());
  EXPECT_TRUE(Roster::Decode("1--3").empty());
  EXPECT_EQ(Roster::NodeIn("0-2,-1,9", 9), 4);
}

TEST(Roster, NodeInReadsTheOrdersList) {
  EXPECT_EQ(Roster::NodeIn("0,3,2", 3), 1);
  EXPECT_EQ(Roster::NodeIn("0,3,2", 1), -1);
  EXPECT_EQ(Roster::NodeIn("", 0), -2);
  EXPECT_EQ(Roster::NodeIn("0,x", 0), -2);
  EXPECT_EQ(Roster::NodeIn("0,,1", 1), -2);
}

TEST(Roster, TheRecordNamesEachRetiredNode) {
  Roster r(4, 1);
  r.Retire(1, "gpu\"7", "lost: silent for 5.0 s", 2);
  EXPECT_EQ(r.RetiredJson(),
            "[{\"shim\":1,\"node\":1,\"host\":\"gpu\\\"7\",\"reason\":\"lost: silent for 5.0 s\","
            "\"attempt\":2}]");
  EXPECT_EQ(r.RetiredText(),
            "aml-shim:   NODE_RANK 1, rank 1's shim on gpu\"7, retired in attempt 2: lost: "
            "silent for 5.0 s\n");
}

// A node --retire-slow retired whose slowness then followed its ranks is
// given back: a spare again (lowest launcher rank first), its record kept
// with why, and so handed to a heir. A node retired for another reason is
// not given back.
TEST(Roster, ANodeRetiredAsSlowIsGivenBackAsASpare) {
  Roster r(5, 2);
  r.Retire(1, "h1", std::string(kSlowReason) + "its ranks entered 30 of 30 collectives last", 1);
  ASSERT_TRUE(r.Fill());  // NODE_RANK 1 to shim 3
  r.Retire(2, "h2", "lost: silent for 5.0 s", 2);
  EXPECT_EQ(r.SlowRetirement(1)->shim, 1);
  EXPECT_EQ(r.SlowRetirement(2), nullptr);
  EXPECT_FALSE(r.GiveBack(2, "no"));
  ASSERT_TRUE(r.GiveBack(1, "NODE_RANK 1's lateness followed its ranks"));
  EXPECT_FALSE(r.GiveBack(1, "twice"));
  EXPECT_FALSE(r.Retired(1));
  EXPECT_EQ(r.Spares(), (std::vector<int>{1, 4}));
  EXPECT_EQ(r.SlowRetirement(1)->given_back, "NODE_RANK 1's lateness followed its ranks");
  EXPECT_NE(r.RetiredJson().find("\"attempt\":1,\"given_back\":\"NODE_RANK 1's lateness "
                                 "followed its ranks\"}"),
            std::string::npos)
      << r.RetiredJson();
  auto j = ParseJson(r.Save());
  ASSERT_TRUE(j.ok()) << r.Save();
  Roster back(5, 2);
  ASSERT_TRUE(back.Load(*j));
  EXPECT_FALSE(back.Retired(1));
  EXPECT_TRUE(back.Retired(2));
  EXPECT_EQ(back.Spares(), (std::vector<int>{1, 4}));
  EXPECT_EQ(back.RetiredJson(), r.RetiredJson());
}

}  // namespace
}  // namespace aml
