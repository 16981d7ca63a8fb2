// Whether a failed attempt of the job is started again (docs/control-plane.md,
// "Restarts"): --max-restarts N bounds the restarts; failures that a restart
// cannot fix are never restarted. Rank 0's shim decides (shim/control/plane.h),
// once every shim has ended its ranks; this file holds the rule and the words.
#pragma once

#include <string>
#include <vector>

namespace aml {

// One attempt of the whole job, as rank 0's shim saw it end.
struct AttemptRecord {
  int number = 1;              // 1 for the first attempt
  double duration_s = 0;       // from its start until its first failure
  int exit_code = 0;           // what aml-shim exits with for it
  std::string what;            // "rank 3 exited with status 7", "the job was hung (...)"
  int rank = -1;               // the first failing rank (-1: a hang)
  bool hang = false;
  double failure_wall = 0;     // CLOCK_REALTIME of the first failure
  // Known once every shim ended its ranks (outputs_known):
  bool outputs_known = false;
  double first_output_wall = 0;  // the attempt's first output, any rank (0: none)
  int shims_ended_well = 0;    // shims whose ranks had all ended with 0
  // With --spares: a node of this attempt was retired and a spare takes its
  // place, so neither a loss (125) nor the same failure again is a reason
  // not to restart (the budget still is).
  bool node_replaced = false;
  // With --spares: the host that held each NODE_RANK in this attempt.
  std::vector<std::string> nodes;
  // With --warm-restart, a restart's attempt: how many shims said how their
  // ranks started (0: none said), and of those ranks how many started from
  // their standbys and how many cold (docs/control-plane.md, "Warm restarts").
  int warm_shims = 0;
  int started_warm = 0;
  int started_cold = 0;
};

// Progress (docs/control-plane.md, "Restarts"): an attempt made progress when
// a rank wrote output before its last second (what a failing rank writes
// then, its traceback, is not counted), or when it ran kProgressS or longer
// (a quiet job that logs to files still trains). Known once every shim ended
// its ranks (outputs_known).
constexpr double kLastWordsS = 1.0;
constexpr double kProgressS = 60.0;
bool MadeProgress(const AttemptRecord& a);

// Two failures in a row without progress, with the same exit status: the
// script cannot start (a SyntaxError, an ImportError, a bad argument) and
// every further attempt fails the same way.
bool SameFailureWithoutProgress(const AttemptRecord& a, const AttemptRecord& before);

// Back-off before the next attempt: none after an attempt that ran
// kProgressS or longer, nor for the first of a series of short attempts (a
// single failure restarts at once); then 1 s, 2 s, 4 s ... at most
// kMaxBackoffS.
constexpr double kMaxBackoffS = 30.0;
double BackoffS(const std::vector<AttemptRecord>& attempts);

struct RestartVerdict {
  bool restart = false;
  std::string why_not;  // "" when restarted, else the reason, for the summary
};

// `restarts_done`: restarts already made before this attempt ended;
// `before`: the attempt before it (null for the first).
RestartVerdict DecideRestart(const AttemptRecord& a, const AttemptRecord* before,
                             int restarts_done, int max_restarts);

// "aml-shim: restart 1 of 3 after rank 3 exited with status 7 (attempt 1 ran 12.3 s)\n",
// with "; after a back-off of 4 s" inside the brackets when `backoff_s` > 0.
std::string RestartLine(const AttemptRecord& a, int restart, int max_restarts,
                        double backoff_s = 0);

// The summary's list of attempts, one line each ("" when there was one): the
// first and the last kShownAttempts, and how many between them.
constexpr size_t kShownAttempts = 3;
std::string AttemptsText(const std::vector<AttemptRecord>& attempts, int max_restarts,
                         const std::string& why_not);

// failure.json's "attempts": a JSON array of the first and the last
// kKeptAttempts / 2 (each record carries its number, so a gap shows).
constexpr size_t kKeptAttempts = 100;
std::string AttemptsJson(const std::vector<AttemptRecord>& attempts);

// Adds `"attempts": <array>` (and `"restart_refused"` when not empty) to a
// JSON object's text.
std::string WithAttempts(const std::string& object, const std::string& attempts_json,
                         const std::string& why_not);

}  // namespace aml
