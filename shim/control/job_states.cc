#include "shim/control/job_states.h"

namespace aml {

const JobStateRow kJobStates[11] = {
    {JobState::kRunning, "running", "an attempt runs, nothing wrong seen here"},
    {JobState::kFailed, "failed", "(not rank 0) a rank here failed; waits for rank 0's verdict"},
    {JobState::kHalted, "halted",
     "(not rank 0) rank 0 heard of a failure and had every shim end its ranks at once; waits "
     "for the verdict that names the job's first"},
    {JobState::kDeciding, "deciding",
     "(rank 0) the ranks end at once; failures arrive for 0.1 s; then the earliest (by its "
     "wall clock) is the job's"},
    {JobState::kCollecting, "collecting", "a hang verdict: every shim reads its ranks' stacks"},
    {JobState::kEnding, "ending", "a restart round: every shim ends its ranks and says so"},
    {JobState::kBackingOff, "backing_off",
     "(rank 0) every shim ended: the next attempt waits its back-off"},
    {JobState::kDone, "done", "(not rank 0) this part of the job ended well; told the parent"},
    {JobState::kStopped, "stopped",
     "the job's verdict is given: the ranks end, the shims below first"},
    {JobState::kSignalled, "signalled",
     "the launcher stopped this shim (or is gone): it leaves at once"},
    {JobState::kElecting, "electing",
     "(the root's heir, with --spares) the root was lost: the shims that reach the heir end "
     "their ranks and say so; with more than half of the job's shims it is the new root"},
};

namespace {
using S = JobState;
constexpr JobMove Move(S from, S to, const char* when) { return {false, from, to, when}; }
}  // namespace

const JobMove kJobMoves[] = {
    Move(S::kRunning, S::kFailed, "a rank fails\\n(not rank 0)"),
    Move(S::kRunning, S::kDeciding, "a failure\\n(rank 0): halt"),
    Move(S::kRunning, S::kHalted, "halt"),
    Move(S::kHalted, S::kStopped, "stop"),
    Move(S::kHalted, S::kEnding, "end"),
    Move(S::kFailed, S::kCollecting, "collect"),
    Move(S::kRunning, S::kCollecting, "hang-timeout\\n(rank 0) / collect"),
    Move(S::kRunning, S::kDone, "ranks ended well,\\nshims below done"),
    Move(S::kDeciding, S::kEnding, "0.1 s: restart may follow"),
    Move(S::kDeciding, S::kStopped, "0.1 s: no restart"),
    Move(S::kFailed, S::kEnding, "end"),
    Move(S::kFailed, S::kStopped, "stop"),
    Move(S::kCollecting, S::kEnding, "roll-call,\\nrestart may follow"),
    Move(S::kCollecting, S::kStopped, "roll-call / stop /\\n30 s without word"),
    Move(S::kEnding, S::kBackingOff, "every shim ended\\n(rank 0)"),
    Move(S::kEnding, S::kRunning, "restart"),
    Move(S::kEnding, S::kStopped, "no restart / stop /\\ngrace + 30 s"),
    Move(S::kBackingOff, S::kRunning, "back-off over:\\nrestart"),
    Move(S::kRunning, S::kStopped, "stop / bye / loss"),
    Move(S::kDone, S::kStopped, "stop"),
    Move(S::kRunning, S::kEnding, "end\\n(a restart round)"),
    Move(S::kBackingOff, S::kStopped, "stop / loss"),
    Move(S::kRunning, S::kElecting, "the root lost\\n(its heir)"),
    Move(S::kFailed, S::kElecting, "the root lost\\n(its heir)"),
    Move(S::kHalted, S::kElecting, "the root lost\\n(its heir)"),
    Move(S::kCollecting, S::kElecting, "the root lost\\n(its heir)"),
    Move(S::kEnding, S::kElecting, "the root lost\\n(its heir)"),
    Move(S::kElecting, S::kEnding, "a majority:\\nthe new root's restart"),
    Move(S::kElecting, S::kStopped, "no majority /\\nno spare left"),
    {true, S::kRunning, S::kSignalled, "SIGTERM /\\nlauncher gone"},
};
const int kJobMoveCount = static_cast<int>(sizeof(kJobMoves) / sizeof(kJobMoves[0]));

const char* JobStateName(JobState s) {
  for (const JobStateRow& r : kJobStates)
    if (r.state == s) return r.name;
  return "?";
}

bool JobMoveAllowed(JobState from, JobState to) {
  for (int i = 0; i < kJobMoveCount; ++i) {
    const JobMove& m = kJobMoves[i];
    if (m.to == to && (m.any || m.from == from)) return true;
  }
  return false;
}

std::string JobStatesDot() {
  std::string out =
      "// The job's state machine (docs/control-plane.md, \"The job's state machine\").\n"
      "// Made from shim/control/job_states.cc (aml-plane-sim --job-states): do not edit.\n"
      "digraph job_states {\n"
      "  rankdir=LR;\n"
      "  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n"
      "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  for (const JobStateRow& r : kJobStates) out += "  " + std::string(r.name) + ";\n";
  for (int i = 0; i < kJobMoveCount; ++i) {
    const JobMove& m = kJobMoves[i];
    out += "  " + std::string(m.any ? "any_state" : JobStateName(m.from)) + " -> " +
           JobStateName(m.to) + " [label=\"" + m.when + "\"];\n";
  }
  return out + "  any_state [label=\"(any state)\", shape=plaintext];\n}\n";
}

}  // namespace aml
