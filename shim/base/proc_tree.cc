#include "shim/base/proc_tree.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace aml {
bool ReadProcStat(pid_t pid, std::string* comm, pid_t* parent) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  *comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  char state = 0;
  long ppid = 0;
  if (!(rest >> state >> ppid)) return false;
  *parent = static_cast<pid_t>(ppid);
  return true;
}

std::optional<pid_t> AncestorNamed(const std::string& comm) {
  pid_t pid = getppid();
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    std::string name;
    pid_t parent = 0;
    if (!ReadProcStat(pid, &name, &parent)) return std::nullopt;
    if (name == comm) return pid;
    pid = parent;
  }
  return std::nullopt;
}

}  // namespace aml
