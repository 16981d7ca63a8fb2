#include "launch/flight/fr_env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstring>

#include "launch/flight/fr_agent_py.h"
#include "shim/base/write_new_file.h"

namespace aml {
namespace {

const char* const kBuffer[] = {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"};
const char* const kDump[] = {"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"};
constexpr const char* kPipe = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE";
constexpr const char* kWhy = "--flight-recorder auto (with --hang-timeout): ";

// The value `name` has in a child's environment: the last set of it, else
// the shim's.
const std::string* Effective(const EnvSnapshot& base, const EnvSets& sets, const char* name) {
  for (auto it = sets.rbegin(); it != sets.rend(); ++it)
    if (it->first == name) return it->second == EnvRemoved() ? nullptr : &it->second;
  return base.Find(name);
}

// The pair's names (torch 2.9's, and its deprecated one): the one the user
// set is kept (and the other left alone: theirs decides); neither set, the
// new one is (torch 2.9 on warns of the old name; before 2.9 aml-shim's
// agent copies it to the old one as torch.distributed is imported).
void Pair(const EnvSnapshot& env, const char* const names[2], const std::string& value,
          const std::string& why, ContractBuilder* b) {
  for (int i = 0; i < 2; ++i)
    if (env.Has(names[i])) return b->Default(names[i], value, why);
  b->Default(names[0], value,
             why + " (torch before 2.9 reads " + names[1] + ": aml-shim's agent sets it)");
}

}  // namespace

std::string FlightAttemptDir(const std::string& private_dir, int attempt) {
  return private_dir + "/fr-" + std::to_string(attempt);
}

std::string FlightAgentDir(const std::string& private_dir) { return private_dir + "/python"; }

void AddFlightVars(const EnvSnapshot& env, const std::string& private_dir, int attempt,
                   ContractBuilder* b) {
  const std::string dir = FlightAttemptDir(private_dir, attempt);
  Pair(env, kBuffer, std::to_string(kFlightEntries),
       kWhy + std::string("PyTorch's flight recorder keeps each rank's last ") +
           std::to_string(kFlightEntries) + " collectives",
       b);
  b->Default(kPipe, dir + "/pipe-rank-",
             kWhy + std::string("a byte written to this FIFO (+ RANK + .pipe) asks the rank for "
                                "its record, in a private 0700 directory of this attempt"));
  Pair(env, kDump, dir + "/dump-rank-",
       kWhy + std::string("where the rank writes its record (+ RANK) when asked"), b);
  const std::string* theirs = env.Find("PYTHONPATH");
  b->Force("PYTHONPATH", AgentPythonPath(env, private_dir),
           kWhy + std::string("aml-shim's sitecustomize serves the record where torch has no "
                              "reader (Gloo), then runs yours") +
               (theirs && !theirs->empty() ? "; your PYTHONPATH follows" : ""));
}

std::string AgentPythonPath(const EnvSnapshot& env, const std::string& private_dir) {
  const std::string agent = FlightAgentDir(private_dir);
  const std::string* theirs = env.Find("PYTHONPATH");
  return theirs && !theirs->empty() ? agent + ":" + *theirs : agent;
}

std::string WarmLearnPrefix(const std::string& private_dir) {
  return private_dir + "/modules-rank-";
}

void AddWarmLearnVars(const EnvSnapshot& env, const std::string& private_dir, bool with_agent,
                      ContractBuilder* b) {
  b->Force("AML_SHIM_LEARN_MODULES", WarmLearnPrefix(private_dir),
           "--warm-restart: aml-shim's agent writes here (+ RANK), once the process group is "
           "up, which installed modules the rank imported; a standby interpreter per rank, kept "
           "beside it, imports them (its memory: that interpreter's with those imports, about "
           "220 MB resident with Debian's torch 1.13; the metric "
           "aml_shim_warm_standby_resident_bytes says each one's)");
  if (!with_agent) return;
  const std::string* theirs = env.Find("PYTHONPATH");
  b->Force("PYTHONPATH", AgentPythonPath(env, private_dir),
           std::string("--warm-restart: aml-shim's sitecustomize learns the rank's modules, then "
                       "runs yours") +
               (theirs && !theirs->empty() ? "; your PYTHONPATH follows" : ""));
}

Status MakeFlightAgent(const std::string& private_dir) {
  const std::string dir = FlightAgentDir(private_dir);
  if (mkdir(dir.c_str(), 0700) != 0)
    return Error{"cannot make " + dir + ": " + std::strerror(errno)};
  return WriteNewFile(dir + "/sitecustomize.py",
                      std::string_view(kFlightAgentPy, sizeof kFlightAgentPy - 1));
}

Status MakeFlightAttemptDir(const std::string& private_dir, int attempt) {
  const std::string dir = FlightAttemptDir(private_dir, attempt);
  if (mkdir(dir.c_str(), 0700) != 0)
    return Error{"cannot make " + dir + ": " + std::strerror(errno)};
  return Ok();
}

void RemoveFlightAttemptDir(const std::string& private_dir, int attempt) {
  const std::string dir = FlightAttemptDir(private_dir, attempt);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  if (DIR* d = fdopendir(fd)) {
    while (dirent* e = readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        unlinkat(fd, e->d_name, 0);
    closedir(d);
  } else {
    close(fd);
  }
  rmdir(dir.c_str());
}

std::string FlightRecordPrefix(int attempt) {
  return "fr-attempt" + std::to_string(attempt) + "-rank-";
}

std::string FlightRecordName(int attempt, int rank) {
  return FlightRecordPrefix(attempt) + std::to_string(rank);
}

std::optional<FlightFiles> FlightFilesOf(const EnvSnapshot& base, const EnvSets& sets, int rank) {
  const std::string* pipe = Effective(base, sets, kPipe);
  if (!pipe || pipe->empty()) return std::nullopt;
  const std::string* dump = Effective(base, sets, kDump[0]);
  if (!dump || dump->empty()) dump = Effective(base, sets, kDump[1]);
  // torch's own default when neither is set.
  const std::string prefix = dump && !dump->empty() ? *dump : "/tmp/nccl_trace_rank_";
  const std::string r = std::to_string(rank);
  return FlightFiles{*pipe + r + ".pipe", prefix + r,           prefix + r + ".why",
                     prefix + r + ".more",  prefix + r + ".light", prefix + r + ".exit"};
}

}  // namespace aml
