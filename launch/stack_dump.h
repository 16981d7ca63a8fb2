// A Python rank's stack as faulthandler prints it on SIGABRT (the children
// are started with PYTHONFAULTHANDLER=1 under --hang-timeout): the frames of
// its main thread, and a one-line signature of the innermost ones, by which
// the hang's roll-call groups ranks (shim/control/roll_call.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aml {

struct StackFrame {
  std::string file;      // as printed (a path)
  int line = 0;
  std::string function;  // "all_reduce", "<module>"
};

struct PythonStack {
  std::vector<StackFrame> main_thread;  // innermost first
  int threads = 0;                      // Python threads in the dump
  std::string text;                     // the dump, from "Fatal Python error"
};

// The last faulthandler dump in `stderr_tail`, or nothing when there is none
// (not a Python process, faulthandler off, or the rank did not get to it).
// faulthandler lists threads newest first, so the main thread is the last.
std::optional<PythonStack> ParseFaulthandlerDump(std::string_view stderr_tail);

// The frames of the last Python traceback in `stderr_tail`, innermost first
// (empty: none): where a rank was when an exception ended it.
std::vector<StackFrame> ParseLastTraceback(std::string_view stderr_tail);

// The innermost `depth` frames, each "function (file:line)" with the file's
// base name, joined by " < ": torch's all_reduce first, then the script's
// main that called it.
std::string StackSignature(const std::vector<StackFrame>& frames, size_t depth = 3);

}  // namespace aml
