#include "shim/base/log.h"

#include <unistd.h>

namespace aml {
namespace {

Verbosity g_verbosity = Verbosity::kNormal;
LogSink g_sink = nullptr;

// One write() per message so lines from many ranks do not interleave.
void Emit(const std::string& prefix, const std::string& msg) {
  std::string line = "aml-shim: " + prefix + EscapeControl(msg) + "\n";
  if (g_sink) {
    g_sink(line);
    return;
  }
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(STDERR_FILENO, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

std::string EscapeControl(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out.push_back(ch);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

void SetVerbosity(Verbosity v) { g_verbosity = v; }
void SetLogSink(LogSink sink) { g_sink = sink; }
Verbosity GetVerbosity() { return g_verbosity; }
void LogError(const std::string& msg) { Emit("", msg); }
void LogWarning(const std::string& msg) {
  if (g_verbosity != Verbosity::kQuiet) Emit("warning: ", msg);
}
void LogInfo(const std::string& msg) {
  if (g_verbosity != Verbosity::kQuiet) Emit("", msg);
}
void LogVerbose(const std::string& msg) {
  if (g_verbosity == Verbosity::kVerbose) Emit("", msg);
}

}  // namespace aml
