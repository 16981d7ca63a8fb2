#include "launch/failure_report.h"

#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include "launch/wait_status.h"
#include "shim/base/json.h"
#include "shim/base/log.h"
#include "shim/base/units.h"

namespace aml {

std::vector<std::string> LastLines(const std::string& text, size_t n) {
  std::vector<std::string> lines;
  size_t end = text.size();
  while (end > 0 && lines.size() < n) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    if (!line.empty()) lines.insert(lines.begin(), line);
    if (start == 0) break;
    end = start - 1;
  }
  return lines;
}

namespace {

std::string Seconds(double s) { return FormatNumber(s, "%.2f s"); }

std::string Command(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  s = s.size() > 200 ? s.substr(0, 200) + "..." : s;
  return EscapeControl(s);
}

}  // namespace

namespace {

// "==================== job failed ====================": the title in a
// banner of kBannerWidth.
constexpr size_t kBannerWidth = 52;
std::string Banner(const std::string& title) {
  const std::string t = " " + title + " ";
  if (t.size() >= kBannerWidth) return t;
  const size_t left = (kBannerWidth - t.size()) / 2;
  return std::string(left, '=') + t + std::string(kBannerWidth - t.size() - left, '=');
}

}  // namespace

std::string RetitleSummary(std::string summary, const std::string& title) {
  const std::string was = Banner("job failed");
  if (const size_t at = summary.find(was); at != std::string::npos)
    summary.replace(at, was.size(), Banner(title));
  return summary;
}

std::string FormatFailureSummary(const ChildOutcome& o, size_t tail_lines) {
  const std::string p = "aml-shim: ";
  std::string out = p + Banner("job failed") + "\n";
  out += p + "first failure: rank " + std::to_string(o.rank) + " (local rank " +
         std::to_string(o.local_rank) + ", node " + std::to_string(o.node_rank) +
         ", host " + o.host + ")\n";
  out += p + "  status:   " + DescribeStatus(o.wait_status) + " -> aml-shim exits " +
         std::to_string(ExitCodeFor(o.wait_status)) + "\n";
  out += p + "  run time: " + Seconds(o.runtime_s) + "\n";
  if (!o.exception.empty()) out += p + "  exception: " + EscapeControl(o.exception) + "\n";
  if (!o.traceback.empty()) {
    out += p + "  traceback (TORCHELASTIC_ERROR_FILE, last lines):\n";
    for (const auto& l : LastLines(o.traceback, tail_lines)) out += p + "  | " + EscapeControl(l) + "\n";
  }
  out += p + "  command:  " + Command(o.argv) + "\n";
  auto lines = LastLines(o.stderr_tail, tail_lines);
  if (!lines.empty()) {
    out += p + "  last lines of its stderr:\n";
    for (const auto& l : lines) out += p + "  | " + l + "\n";
  }
  out += p + "====================================================\n";
  return out;
}

std::string FailureJson(const ChildOutcome& o, size_t tail_lines) {
  JsonWriter j;
  j.BeginObject();
  j.Key("run").String(o.run_id);
  j.Key("rank").Int(o.rank);
  j.Key("local_rank").Int(o.local_rank);
  j.Key("node_rank").Int(o.node_rank);
  j.Key("host").String(o.host);
  j.Key("exit_code").Int(ExitCodeFor(o.wait_status));
  if (WIFSIGNALED(o.wait_status)) {
    j.Key("signal").Int(WTERMSIG(o.wait_status));
    j.Key("signal_name").String(SignalName(WTERMSIG(o.wait_status)));
  } else {
    j.Key("signal").Null();
  }
  j.Key("status").String(DescribeStatus(o.wait_status));
  j.Key("runtime_s").Number(o.runtime_s);
  j.Key("argv").BeginArray();
  for (const auto& a : o.argv) j.String(a);
  j.EndArray();
  if (!o.exception.empty() || !o.traceback.empty()) {
    j.Key("exception").BeginObject();
    j.Key("message").String(o.exception);
    j.Key("traceback").BeginArray();
    for (const auto& l : LastLines(o.traceback, 1000)) j.String(l);
    j.EndArray();
    j.EndObject();
  }
  j.Key("stderr_tail").BeginArray();
  for (const auto& l : LastLines(o.stderr_tail, tail_lines)) j.String(l);
  j.EndArray();
  j.EndObject();
  return j.str() + "\n";
}

std::string FailureJsonPrefix(const std::string& run_id) {
  JsonWriter j;
  j.BeginObject();
  j.Key("run").String(run_id);
  return j.str();
}

std::string StopJson(const std::string& run_id, int exit_code, const std::string& message) {
  JsonWriter j;
  j.BeginObject();
  j.Key("run").String(run_id);
  j.Key("exit_code").Int(exit_code);
  std::string line = message;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  j.Key("error").String(line);
  j.EndObject();
  return j.str();
}

std::string WithMember(const std::string& object, const std::string& key,
                       const std::string& json) {
  const size_t close = object.rfind('}');
  if (close == std::string::npos || json.empty()) return object;
  size_t k = close;
  while (k > 0 && (object[k - 1] == ' ' || object[k - 1] == '\n')) --k;
  const bool empty = k > 0 && object[k - 1] == '{';
  return object.substr(0, k) + (empty ? "" : ",") + JsonQuote(key) + ":" + json + object.substr(k);
}

std::string WithRetired(const std::string& object, const std::string& retired_json) {
  return WithMember(object, "retired", retired_json);
}

}  // namespace aml
