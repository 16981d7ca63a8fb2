#include "launch/restart_policy.h"

#include <algorithm>

#include "shim/base/exit_code.h"
#include "shim/base/json.h"
#include "shim/base/units.h"

namespace aml {

bool MadeProgress(const AttemptRecord& a) {
  return a.hang || a.duration_s >= kProgressS ||
         (a.first_output_wall > 0 && a.first_output_wall <= a.failure_wall - kLastWordsS);
}

bool SameFailureWithoutProgress(const AttemptRecord& a, const AttemptRecord& before) {
  return a.outputs_known && before.outputs_known && !MadeProgress(a) && !MadeProgress(before) &&
         a.exit_code == before.exit_code;
}

double BackoffS(const std::vector<AttemptRecord>& attempts) {
  int short_run = 0;  // short attempts in a row, ending with the last
  for (auto it = attempts.rbegin(); it != attempts.rend() && it->duration_s < kProgressS; ++it)
    ++short_run;
  if (short_run < 2) return 0;
  double delay = 1;
  for (int i = 2; i < short_run && delay < kMaxBackoffS; ++i) delay *= 2;
  return std::min(delay, kMaxBackoffS);
}

RestartVerdict DecideRestart(const AttemptRecord& a, const AttemptRecord* before,
                             int restarts_done, int max_restarts) {
  RestartVerdict v;
  if (max_restarts <= 0) {
    v.why_not = "no --max-restarts";
  } else if (restarts_done >= max_restarts) {
    v.why_not = "--max-restarts " + std::to_string(max_restarts) + " spent";
  } else if (a.exit_code == kExitShimFailure && !a.node_replaced) {
    v.why_not = "not restarted: aml-shim's own failure (125), which a restart cannot fix";
  } else if (a.exit_code == 126 || a.exit_code == 127) {
    v.why_not = "not restarted: the command could not be run (" + std::to_string(a.exit_code) +
                "), which a restart cannot fix";
  } else if (a.shims_ended_well > 0) {
    v.why_not = "not restarted: the ranks of " + std::to_string(a.shims_ended_well) +
                (a.shims_ended_well == 1 ? " shim" : " shims") +
                " had already ended with status 0, and cannot be started again";
  } else if (before && !a.node_replaced && SameFailureWithoutProgress(a, *before)) {
    v.why_not = "not restarted: attempts " + std::to_string(before->number) + " and " +
                std::to_string(a.number) + " both failed with exit status " +
                std::to_string(a.exit_code) + " without progress (no output before their " +
                "last second, each ran under " + FormatNumber(kProgressS, "%.0f") +
                " s): an error in the script, its imports or its arguments fails every "
                "attempt the same way";
  } else {
    v.restart = true;
  }
  return v;
}

std::string RestartLine(const AttemptRecord& a, int restart, int max_restarts,
                        double backoff_s) {
  return "aml-shim: restart " + std::to_string(restart) + " of " + std::to_string(max_restarts) +
         " after " + a.what + " (attempt " + std::to_string(a.number) + " ran " +
         FormatNumber(a.duration_s, "%.1f") + " s" +
         (backoff_s > 0 ? "; after a back-off of " + FormatNumber(backoff_s, "%.0f") + " s" : "") +
         ")\n";
}

std::string AttemptsText(const std::vector<AttemptRecord>& attempts, int max_restarts,
                         const std::string& why_not) {
  if (attempts.size() < 2 && max_restarts <= 0) return "";
  std::string out = "aml-shim: " + std::to_string(attempts.size()) +
                    (attempts.size() == 1 ? " attempt" : " attempts") + " (--max-restarts " +
                    std::to_string(max_restarts) + ")" +
                    (why_not.empty() ? "" : "; " + why_not) + ":\n";
  const size_t n = attempts.size();
  for (size_t i = 0; i < n; ++i) {
    if (i == kShownAttempts && n > 2 * kShownAttempts) {
      const size_t hidden = n - 2 * kShownAttempts;
      out += "aml-shim:   ... " + std::to_string(hidden) +
             (hidden == 1 ? " attempt" : " attempts") + " more (failure.json lists them)\n";
      i = n - kShownAttempts;
    }
    const AttemptRecord& a = attempts[i];
    // (--spares) Where the NODE_RANKs ran, when a spare had taken one.
    std::string moved;
    for (size_t k = 0; k < a.nodes.size() && k < attempts[0].nodes.size(); ++k)
      if (a.nodes[k] != attempts[0].nodes[k])
        moved += (moved.empty() ? " (" : ", ") + std::string("NODE_RANK ") + std::to_string(k) +
                 " on " + a.nodes[k];
    if (!moved.empty()) moved += ")";
    out += "aml-shim:   attempt " + std::to_string(a.number) + ": " + a.what + " after " +
           FormatNumber(a.duration_s, "%.1f") + " s" + moved + "\n";
  }
  return out;
}

std::string AttemptsJson(const std::vector<AttemptRecord>& attempts) {
  std::string out = "[";
  const size_t n = attempts.size();
  for (size_t i = 0; i < n; ++i) {
    if (i == kKeptAttempts / 2 && n > kKeptAttempts) i = n - kKeptAttempts / 2;
    const AttemptRecord& a = attempts[i];
    if (out.size() > 1) out += ",";
    out += "{\"attempt\":" + std::to_string(a.number) +
           ",\"duration_s\":" + FormatNumber(a.duration_s, "%.3f") +
           ",\"exit_code\":" + std::to_string(a.exit_code) + ",\"first_failure\":" +
           JsonQuote(a.what) + ",\"rank\":" + (a.rank >= 0 ? std::to_string(a.rank) : "null") +
           ",\"hang\":" + (a.hang ? "true" : "false");
    if (!a.nodes.empty()) {
      out += ",\"nodes\":[";
      for (size_t k = 0; k < a.nodes.size(); ++k)
        out += (k ? "," : "") + JsonQuote(a.nodes[k]);
      out += "]";
    }
    if (a.warm_shims > 0)
      out += ",\"warm_restart\":{\"shims\":" + std::to_string(a.warm_shims) +
             ",\"warm\":" + std::to_string(a.started_warm) +
             ",\"cold\":" + std::to_string(a.started_cold) + "}";
    out += "}";
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
