// aml-shim's own messages on stderr, each one line starting "aml-shim: ".
#pragma once

#include <string>
#include <string_view>

namespace aml {

enum class Verbosity { kQuiet, kNormal, kVerbose };

void SetVerbosity(Verbosity v);
// Where lines go instead of a blocking write to stderr (nullptr: stderr);
// the supervisor queues them behind the children's output while it runs.
using LogSink = void (*)(const std::string& line);
void SetLogSink(LogSink sink);
Verbosity GetVerbosity();
void LogError(const std::string& msg);    // always shown
void LogWarning(const std::string& msg);  // hidden by --quiet
void LogInfo(const std::string& msg);     // hidden by --quiet
void LogVerbose(const std::string& msg);  // shown with --verbose

// Control characters as \n, \r, \t or \xNN: every message goes through it, so
// a value quoted in one (a variable with a newline) cannot forge a line.
std::string EscapeControl(std::string_view s);

}  // namespace aml
