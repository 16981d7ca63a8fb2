#include "shim/net/crowded_door.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

TEST(CrowdedDoor, TheSeatOfWhoeverSentLeastGoesFirstTheOldestAmongEquals) {
  // A shim's partial hello outranks a silent stranger, however long each
  // has waited; among the silent, the longest-waiting goes.
  EXPECT_EQ(SeatToFree({{10, 1.0}, {0, 5.0}, {0, 3.0}, {200, 0.5}}), 2u);
  EXPECT_EQ(SeatToFree({{10, 1.0}, {4, 5.0}}), 1u);
  EXPECT_EQ(SeatToFree({{0, 2.0}}), 0u);
}

TEST(CrowdedDoor, TheNoteSaysWhichDoorAndHowMany) {
  DoorCrowd silent, partial;
  EXPECT_EQ(silent.Note("MASTER_PORT"), "");  // nothing given up: nothing to say
  for (int i = 0; i < 1200; ++i) silent.GaveUp(0);
  for (int i = 0; i < 3; ++i) partial.GaveUp(10);
  const std::string note = silent.Note("MASTER_PORT");
  EXPECT_EQ(note.rfind("MASTER_PORT is flooded: 1200 connection(s) that had sent nothing were "
                       "closed to make room for the job's shims",
                       0),
            0u)
      << note;
  EXPECT_NE(partial.Note("MASTER_PORT").find("3 that had sent part of a hello"),
            std::string::npos);
}

}  // namespace
}  // namespace aml
