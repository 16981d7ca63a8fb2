#include "launch/restart_policy.h"

#include "shim/base/exit_code.h"
#include "shim/base/json.h"
#include "shim/base/units.h"

namespace aml {

bool FailedAtStart(const AttemptRecord& a) {
  return a.outputs_known && a.number == 1 && !a.hang &&
         (a.first_output_wall <= 0 || a.first_output_wall > a.failure_wall - kLastWordsS);
}

RestartVerdict DecideRestart(const AttemptRecord& a, int restarts_done, int max_restarts) {
  RestartVerdict v;
  if (max_restarts <= 0) {
    v.why_not = "no --max-restarts";
  } else if (restarts_done >= max_restarts) {
    v.why_not = "--max-restarts " + std::to_string(max_restarts) + " spent";
  } else if (a.exit_code == kExitShimFailure) {
    v.why_not = "not restarted: aml-shim's own failure (125), which a restart cannot fix";
  } else if (a.exit_code == 126 || a.exit_code == 127) {
    v.why_not = "not restarted: the command could not be run (" + std::to_string(a.exit_code) +
                "), which a restart cannot fix";
  } else if (a.shims_ended_well > 0) {
    v.why_not = "not restarted: the ranks of " + std::to_string(a.shims_ended_well) +
                (a.shims_ended_well == 1 ? " shim" : " shims") +
                " had already ended with status 0, and cannot be started again";
  } else if (FailedAtStart(a)) {
    v.why_not = "not restarted: the first attempt failed at start, before any rank wrote "
                "output (an error in the script, its imports or its arguments fails again)";
  } else {
    v.restart = true;
  }
  return v;
}

std::string RestartLine(const AttemptRecord& a, int restart, int max_restarts) {
  return "aml-shim: restart " + std::to_string(restart) + " of " + std::to_string(max_restarts) +
         " after " + a.what + " (attempt " + std::to_string(a.number) + " ran " +
         FormatNumber(a.duration_s, "%.1f") + " s)\n";
}

std::string AttemptsText(const std::vector<AttemptRecord>& attempts, int max_restarts,
                         const std::string& why_not) {
  if (attempts.size() < 2 && max_restarts <= 0) return "";
  std::string out = "aml-shim: " + std::to_string(attempts.size()) +
                    (attempts.size() == 1 ? " attempt" : " attempts") + " (--max-restarts " +
                    std::to_string(max_restarts) + ")" +
                    (why_not.empty() ? "" : "; " + why_not) + ":\n";
  for (const AttemptRecord& a : attempts)
    out += "aml-shim:   attempt " + std::to_string(a.number) + ": " + a.what + " after " +
           FormatNumber(a.duration_s, "%.1f") + " s\n";
  return out;
}

std::string AttemptsJson(const std::vector<AttemptRecord>& attempts) {
  std::string out = "[";
  for (const AttemptRecord& a : attempts) {
    if (out.size() > 1) out += ",";
    out += "{\"attempt\":" + std::to_string(a.number) +
           ",\"duration_s\":" + FormatNumber(a.duration_s, "%.3f") +
           ",\"exit_code\":" + std::to_string(a.exit_code) + ",\"first_failure\":" +
           JsonQuote(a.what) + ",\"rank\":" + (a.rank >= 0 ? std::to_string(a.rank) : "null") +
           ",\"hang\":" + (a.hang ? "true" : "false") + "}";
  }
  return out + "]";
}

std::string WithAttempts(const std::string& object, const std::string& attempts_json,
                         const std::string& why_not) {
  const size_t close = object.rfind('}');
  if (close == std::string::npos || attempts_json.empty()) return object;
  std::string extra = "\"attempts\":" + attempts_json;
  if (!why_not.empty()) extra += ",\"restart_refused\":" + JsonQuote(why_not);
  size_t k = close;
  while (k > 0 && (object[k - 1] == ' ' || object[k - 1] == '\n')) --k;
  const bool empty = k > 0 && object[k - 1] == '{';
  return object.substr(0, k) + (empty ? "" : ",") + extra + object.substr(k);
}

}  // namespace aml
