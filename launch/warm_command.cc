#include "launch/warm_command.h"

#include <cctype>
#include <cstring>

namespace aml {
namespace {

// python, python3, python3.11, python3.11d: a CPython launcher's names.
bool IsPythonName(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.compare(0, 6, "python") != 0) return false;
  for (size_t k = 6; k < base.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(base[k])) && base[k] != '.' &&
        !(k + 1 == base.size() && base[k] == 'd'))
      return false;
  return true;
}

// Options that take no argument and change nothing a standby's handoff
// would have to redo (-i, -x and -c are not among them).
constexpr const char* kPlain = "bBEIOqsSuv";

}  // namespace

std::vector<std::string> PythonCommand::SysArgv() const {
  std::vector<std::string> v;
  v.push_back(module ? "-m" : target);
  v.insert(v.end(), args.begin(), args.end());
  return v;
}

std::vector<std::string> PythonCommand::StandbyArgv(const std::string& standby_py) const {
  std::vector<std::string> v{interpreter};
  v.insert(v.end(), flags.begin(), flags.end());
  v.push_back(standby_py);
  return v;
}

Result<PythonCommand> ParsePythonCommand(const std::vector<std::string>& argv) {
  if (argv.empty()) return Error{"no command"};
  if (!IsPythonName(argv[0]))
    return Error{"not a Python interpreter: " + argv[0]};
  PythonCommand c;
  c.interpreter = argv[0];
  size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;  // the script ("-" alone: stdin)
    if (a[1] == '-')
      return Error{"interpreter option " + a + " is not one a standby takes: cold"};
    // A cluster of one-letter options, the last of which may take an
    // argument (-X dev, -Wignore, -uX dev, -m mod).
    bool taken = false;
    for (size_t k = 1; k < a.size() && !taken; ++k) {
      const char o = a[k];
      if (std::strchr(kPlain, o)) continue;
      if (o == 'c') return Error{"-c runs a string, not a script: cold"};
      if (o != 'X' && o != 'W' && o != 'm')
        return Error{"interpreter option -" + std::string(1, o) +
                     " is not one a standby takes: cold"};
      std::string value = a.substr(k + 1);
      if (value.empty()) {
        if (i + 1 >= argv.size())
          return Error{"interpreter option -" + std::string(1, o) + " has no argument"};
        value = argv[++i];
      }
      if (o == 'm') {
        if (k > 1) c.flags.push_back(a.substr(0, k));
        c.module = true;
        c.target = value;
        c.args.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
        return c;
      }
      c.flags.push_back(a.substr(0, k + 1));
      c.flags.push_back(value);
      taken = true;
    }
    if (!taken) c.flags.push_back(a);
  }
  if (i >= argv.size()) return Error{"no script (the interactive interpreter): cold"};
  if (argv[i] == "-") return Error{"the script is read from stdin: cold"};
  c.target = argv[i];
  c.args.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
  return c;
}

}  // namespace aml
