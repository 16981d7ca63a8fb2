#include "shim/base/proc_tree.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace aml {
namespace {

// /proc/PID/stat split at the name: the name, and the fields after it
// (from the third, the state, on).
bool StatLine(pid_t pid, std::string* comm, std::string* rest) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  *comm = line.substr(open + 1, close - open - 1);
  *rest = line.substr(close + 1);
  return true;
}

}  // namespace

bool ReadProcStat(pid_t pid, std::string* comm, pid_t* parent) {
  std::string fields;
  if (!StatLine(pid, comm, &fields)) return false;
  std::istringstream rest(fields);
  char state = 0;
  long ppid = 0;
  if (!(rest >> state >> ppid)) return false;
  *parent = static_cast<pid_t>(ppid);
  return true;
}

std::optional<double> ProcCpuSeconds(pid_t pid) {
  std::string comm, fields;
  if (!StatLine(pid, &comm, &fields)) return std::nullopt;
  // Fields 3 to 13 (state ... cmajflt), then utime, stime, cutime, cstime.
  std::istringstream rest(fields);
  std::string skip;
  for (int i = 3; i <= 13; ++i)
    if (!(rest >> skip)) return std::nullopt;
  long long utime = 0, stime = 0, cutime = 0, cstime = 0;
  if (!(rest >> utime >> stime >> cutime >> cstime)) return std::nullopt;
  const long hz = sysconf(_SC_CLK_TCK);
  return static_cast<double>(utime + stime + cutime + cstime) / static_cast<double>(hz > 0 ? hz : 100);
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
