#include "shim/control/job_states.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace aml {
namespace {

TEST(JobStates, TheDiagramInTheDocsIsTheTables) {
  // docs/job-states.dot is made from the tables (aml-plane-sim
  // --job-states > docs/job-states.dot): it cannot drift from them.
  std::ifstream f(AML_FIXTURES_DIR "/../../docs/job-states.dot");
  ASSERT_TRUE(f.good());
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str(), JobStatesDot())
      << "docs/job-states.dot differs from shim/control/job_states.cc: run "
         "build/aml-plane-sim --job-states > docs/job-states.dot";
}

TEST(JobStates, EveryStateIsNamedOnceAndReachedAndEveryMoveJoinsTwo) {
  std::set<std::string> names;
  for (const JobStateRow& r : kJobStates) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_STREQ(JobStateName(r.state), r.name);
  }
  std::set<JobState> reached{JobState::kRunning};
  for (int i = 0; i < kJobMoveCount; ++i) {
    EXPECT_NE(kJobMoves[i].from, kJobMoves[i].to) << kJobMoves[i].when;
    reached.insert(kJobMoves[i].to);
  }
  EXPECT_EQ(reached.size(), sizeof(kJobStates) / sizeof(kJobStates[0]));
}

TEST(JobStates, OnlyTheTablesMovesAreAllowedAndASignalFromAnywhere) {
  EXPECT_TRUE(JobMoveAllowed(JobState::kRunning, JobState::kFailed));
  EXPECT_FALSE(JobMoveAllowed(JobState::kFailed, JobState::kRunning));
  EXPECT_FALSE(JobMoveAllowed(JobState::kStopped, JobState::kRunning));
  EXPECT_FALSE(JobMoveAllowed(JobState::kDone, JobState::kCollecting));
  for (const JobStateRow& r : kJobStates)
    EXPECT_TRUE(JobMoveAllowed(r.state, JobState::kSignalled)) << r.name;
}

}  // namespace
}  // namespace aml
