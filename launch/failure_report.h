// The one summary a user reads when a job fails: which rank failed first,
// where, how, after how long, and the end of its stderr.
#pragma once

#include <string>
#include <vector>

namespace aml {

struct ChildOutcome {
  std::string run_id;  // the job (launcher's job id) or this shim's run
  int rank = 0;
  int local_rank = 0;
  int node_rank = 0;
  std::string host;
  std::vector<std::string> argv;
  int wait_status = 0;  // as from waitpid
  double runtime_s = 0;
  std::string stderr_tail;  // last bytes of its stderr, when captured
  // What torch's @record wrote to its TORCHELASTIC_ERROR_FILE, if anything.
  std::string exception;    // "ValueError: bad shard"
  std::string traceback;
};

// The last `n` non-empty lines of `text`.
std::vector<std::string> LastLines(const std::string& text, size_t n);

// `object` (a JSON object) with member `key` set to `json` (a JSON value),
// added last; unchanged when `json` is "".
std::string WithMember(const std::string& object, const std::string& key,
                       const std::string& json);

// The stderr block, each line starting "aml-shim: ".
std::string FormatFailureSummary(const ChildOutcome& o, size_t tail_lines = 20);
// A summary whose failure ends an attempt, not the job (a restart follows):
// its banner says `title` ("attempt 1 failed: restarting").
std::string RetitleSummary(std::string summary, const std::string& title);
// The same facts as one JSON object (DIR/failure.json), "run" its first key.
std::string FailureJson(const ChildOutcome& o, size_t tail_lines = 20);
// How every FailureJson of run `run_id` begins.
std::string FailureJsonPrefix(const std::string& run_id);
// A job ended by aml-shim itself (a lost shim, no spare left): the run, the
// exit code and the one line it printed, for failure.json.
std::string StopJson(const std::string& run_id, int exit_code, const std::string& message);
// Adds `"retired": <array>` (--spares: each retired node) to a JSON object's
// text; unchanged when `retired_json` is empty.
std::string WithRetired(const std::string& object, const std::string& retired_json);

}  // namespace aml
