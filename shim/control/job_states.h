// The job's states and the moves between them, as tables
// (docs/control-plane.md, "The job's state machine"; docs/job-states.dot is
// made from them: a unit test fails when the file and the tables differ,
// and `aml-plane-sim --job-states` prints the file). The job machine
// (job_machine.h) enters states only along kJobMoves; a move that is not
// there is recorded as stray, and the simulator's checks fail the run.
#pragma once

#include <string>

namespace aml {

enum class JobState {
  kRunning, kFailed, kHalted, kDeciding, kCollecting, kEnding, kBackingOff, kDone, kStopped,
  kSignalled, kElecting
};

struct JobStateRow {
  JobState state;
  const char* name;  // as logs, failure.json and the docs say it
  const char* what;  // what the job is doing there, and what it waits for
};
extern const JobStateRow kJobStates[11];

struct JobMove {
  bool any = false;  // from every state (a signal)
  JobState from, to;
  const char* when;  // the event, as the diagram labels its arrow
};
extern const JobMove kJobMoves[];
extern const int kJobMoveCount;

const char* JobStateName(JobState s);
bool JobMoveAllowed(JobState from, JobState to);
// docs/job-states.dot, made from the two tables.
std::string JobStatesDot();

}  // namespace aml
