#include "launch/stack_dump.h"

#include <cstdlib>

namespace aml {
namespace {

constexpr std::string_view kFatal = "Fatal Python error";
constexpr std::string_view kFileLine = "  File \"";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// `  File "/x/y.py", line 57 in all_reduce` (faulthandler), or with a comma
// after the number (a traceback).
std::optional<StackFrame> ParseFrame(std::string_view line) {
  if (!StartsWith(line, kFileLine)) return std::nullopt;
  line.remove_prefix(kFileLine.size());
  const size_t q = line.rfind("\", line ");
  if (q == std::string_view::npos) return std::nullopt;
  StackFrame f;
  f.file = std::string(line.substr(0, q));
  std::string_view rest = line.substr(q + 8);
  const size_t in = rest.find(" in ");
  if (in == std::string_view::npos) return std::nullopt;
  std::string number(rest.substr(0, in));
  if (!number.empty() && number.back() == ',') number.pop_back();
  char* end = nullptr;
  const long n = std::strtol(number.c_str(), &end, 10);
  if (number.empty() || *end != '\0' || n < 0 || n > 100000000) return std::nullopt;
  f.line = static_cast<int>(n);
  f.function = std::string(rest.substr(in + 4));
  return f;
}

bool IsThreadHeader(std::string_view line) {
  return (StartsWith(line, "Thread 0x") || StartsWith(line, "Current thread 0x")) &&
         line.find("(most recent call first):") != std::string_view::npos;
}

}  // namespace

std::optional<PythonStack> ParseFaulthandlerDump(std::string_view tail) {
  const size_t start = tail.rfind(kFatal);
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view dump = tail.substr(start);
  PythonStack stack;
  std::vector<StackFrame> current;
  bool in_thread = false;
  size_t end_of_dump = dump.size();
  size_t pos = 0;
  while (pos < dump.size()) {
    size_t nl = dump.find('\n', pos);
    if (nl == std::string_view::npos) nl = dump.size();
    std::string_view line = dump.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (IsThreadHeader(line)) {
      ++stack.threads;
      in_thread = true;
      current.clear();
    } else if (in_thread) {
      if (auto f = ParseFrame(line)) {
        current.push_back(std::move(*f));
      } else if (StartsWith(line, "  <") || StartsWith(line, "  ...")) {
        // "  <no Python frame>", "  ...": part of the thread's block
      } else {
        in_thread = false;
        stack.main_thread = current;
        if (!line.empty() && !StartsWith(line, "Extension modules")) {
          end_of_dump = pos;  // the dump ended: what follows is other output
          break;
        }
      }
    } else if (stack.threads > 0 && !line.empty() && !StartsWith(line, "Extension modules")) {
      end_of_dump = pos;
      break;
    }
    pos = nl + 1;
  }
  if (in_thread) stack.main_thread = current;
  if (stack.threads == 0) return std::nullopt;
  stack.text = std::string(dump.substr(0, end_of_dump));
  while (!stack.text.empty() && stack.text.back() == '\n') stack.text.pop_back();
  stack.text += '\n';
  return stack;
}

std::vector<StackFrame> ParseLastTraceback(std::string_view tail) {
  const size_t start = tail.rfind("Traceback (most recent call last):");
  if (start == std::string_view::npos) return {};
  std::vector<StackFrame> frames;  // outermost first, as printed
  size_t pos = tail.find('\n', start);
  while (pos != std::string_view::npos && pos + 1 < tail.size()) {
    const size_t begin = pos + 1;
    size_t nl = tail.find('\n', begin);
    std::string_view line = tail.substr(begin, (nl == std::string_view::npos ? tail.size() : nl) - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (auto f = ParseFrame(line)) frames.push_back(std::move(*f));
    else if (!StartsWith(line, "    ")) break;  // the exception's line: the traceback ended
    pos = nl;
  }
  return std::vector<StackFrame>(frames.rbegin(), frames.rend());
}

std::string StackSignature(const std::vector<StackFrame>& frames, size_t depth) {
  std::string out;
  for (size_t i = 0; i < frames.size() && i < depth; ++i) {
    const StackFrame& f = frames[i];
    const size_t slash = f.file.rfind('/');
    const std::string base = slash == std::string::npos ? f.file : f.file.substr(slash + 1);
    if (!out.empty()) out += " < ";
    out += f.function;
    if (!base.empty()) out += " (" + base + (f.line > 0 ? ":" + std::to_string(f.line) : "") + ")";
  }
  return out;
}

}  // namespace aml
