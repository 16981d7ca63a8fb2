// Reading a hung rank's stack from outside, before it is ended (docs/control-plane.md,
// "Hang watchdog"): `py-spy dump` for a Python rank when py-spy is on PATH
// (it does not stop the process), else for any other rank the native frames
// of `eu-stack` or `gdb` when one is on PATH. All readers run at once, each
// bounded; what they print is kept whole and parsed into frames of the main
// thread (stack_dump.h) for the roll-call's signature.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/stack_dump.h"

namespace aml {

struct ProbedStack {
  std::string tool;                // "py-spy", "eu-stack", "gdb"; "" when none ran
  std::string text;                // what it printed (or why nothing)
  std::vector<StackFrame> frames;  // the main thread's, innermost first
};

// One reader per pid, all at once, each killed after `timeout_s`.
std::vector<ProbedStack> ProbeStacks(const std::vector<pid_t>& pids, double timeout_s);

// The main thread's frames in each tool's output (for tests).
std::vector<StackFrame> ParsePySpy(const std::string& text);
std::vector<StackFrame> ParseEuStack(const std::string& text, pid_t pid);
std::vector<StackFrame> ParseGdb(const std::string& text);

}  // namespace aml
