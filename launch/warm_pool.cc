#include "launch/warm_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "launch/cpu_affinity.h"
#include "launch/idle_class.h"
#include "launch/wait_status.h"
#include "launch/warm_order.h"
#include "launch/warm_standby_py.h"
#include "shim/base/log.h"
#include "shim/base/read_no_follow.h"
#include "shim/base/write_new_file.h"

namespace aml {
namespace {

constexpr int kOrderFd = 3;  // the order's pipe, in the standby
constexpr int kOrderPipeBytes = 1 << 20;

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

}  // namespace

void WarmPool::Configure(std::string dir, std::string modules, bool pipe_output, bool idle) {
  dir_ = std::move(dir);
  modules_ = std::move(modules);
  pipe_output_ = pipe_output;
  idle_ = idle;
}

void WarmPool::Set(size_t i, int rank, const std::vector<std::string>& argv,
                   const EnvSnapshot* env, const EnvSets& sets, const std::vector<int>& cpus) {
  if (!on()) return;
  if (slots_.size() <= i) slots_.resize(i + 1);
  Slot& s = slots_[i];
  s.command = ParsePythonCommand(argv);
  if (!s.command.ok() && !said_cold_) {
    LogWarning("--warm-restart: " + s.command.error().message + ": restarts start the ranks cold");
    said_cold_ = true;
  }
  s.env = env;
  s.sets = sets;
  s.cpus = cpus;
  s.rank = rank;
}

std::string WarmPool::LearnedPath(const Slot& s) const {
  return s.rank < 0 ? "" : LearnPrefix() + std::to_string(s.rank);
}

Status WarmPool::WriteScript() {
  if (!script_.empty()) return Ok();
  const std::string path = dir_ + "/warm_standby.py";
  Status st = WriteNewFile(path, std::string_view(kWarmStandbyPy, sizeof kWarmStandbyPy - 1));
  if (st.ok()) script_ = path;
  return st;
}

std::string WarmPool::Make(size_t i, pid_t* pid) {
  if (i >= slots_.size() || !slots_[i].env) return "it has no command to start";
  Slot& s = slots_[i];
  if (!s.command.ok()) return s.command.error().message;
  if (s.pid > 0) Drop(s, true);  // (the machine makes one per slot at a time)
  Status written = WriteScript();
  if (!written.ok()) return written.error().message;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return std::string("cannot make a pipe: ") + std::strerror(errno);
  fcntl(p[1], F_SETPIPE_SZ, kOrderPipeBytes);  // as much as allowed; Take checks
  SpawnSpec spec;
  spec.env_sets = s.sets;
  spec.env_sets.emplace_back("AML_SHIM_STANDBY_FD", std::to_string(kOrderFd));
  spec.env_sets.emplace_back("AML_SHIM_STANDBY_MODULES", modules_);
  // The rank's own modules: the file its agent writes when its process
  // group is up (an earlier attempt's at once); the standby looks for it
  // while it waits.
  const std::string learned = LearnedPath(s);
  if (!learned.empty()) spec.env_sets.emplace_back("AML_SHIM_STANDBY_LEARNED", learned);
  spec.pipe_output = pipe_output_;
  spec.idle_class = idle_;
  spec.pass_fd = p[0];
  spec.pass_as = kOrderFd;
  int code = 0;
  Result<SpawnedChild> spawned = Error{""};
  {
    ScopedCpuBinding bind(s.cpus);  // inherited, as the rank's
    spawned = Spawn(s.command->StandbyArgv(script_), *s.env, spec, &code);
  }
  close(p[0]);
  if (!spawned.ok()) {
    close(p[1]);
    return "its standby could not start: " + spawned.error().message;
  }
  s.pid = spawned->pid;
  s.order_fd = p[1];
  s.out_fd = spawned->out_fd;
  s.err_fd = spawned->err_fd;
  *pid = s.pid;
  LogVerbose("--warm-restart: " + (s.rank < 0 ? std::string("a spare's") : "rank " + std::to_string(s.rank) + "'s") + " standby (pid " +
             std::to_string(s.pid) + ") imports " + modules_ +
             (learned.empty() ? "" : " and the rank's own modules (" + learned + ")") +
             (idle_ ? ", in the idle scheduling class" : ""));
  return "";
}

std::optional<SpawnedChild> WarmPool::Take(size_t i, const std::vector<std::string>& argv,
                                           const EnvSnapshot& env, const EnvSets& sets,
                                           std::string* why) {
  if (i >= slots_.size() || slots_[i].pid < 0) {
    *why = "it has no standby";
    return std::nullopt;
  }
  Slot& s = slots_[i];
  Result<PythonCommand> command = ParsePythonCommand(argv);
  if (!command.ok()) {
    *why = command.error().message;
    Drop(s, true);
    return std::nullopt;
  }
  WarmOrder order;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) {
    *why = std::string("the working directory cannot be read: ") + std::strerror(errno);
    Drop(s, true);
    return std::nullopt;
  }
  order.cwd = cwd;
  order.command = *command;
  CArgs envp(env, sets);
  for (char* const* e = envp.data(); *e; ++e) order.env.emplace_back(*e);
  const std::string bytes = EncodeWarmOrder(order);
  if (idle_) {
    // Every thread back to the normal classes before the script's first
    // line: the rank must not run in the idle class.
    Status back = LeaveIdleClass(s.pid);
    if (!back.ok()) {
      *why = "its standby (pid " + std::to_string(s.pid) + ") stayed in the idle class: " +
             back.error().message;
      Drop(s, true);
      return std::nullopt;
    }
  }
  // One killed (the OOM killer, a user) but not reaped yet: in the idle
  // class it ends only when the CPU is idle (found by test_warm_restart.py:
  // SIGKILLed 0.5 s before the restart, it took the order and died as the
  // rank).
  const std::string ending = WhyEnding(s.pid);
  if (!ending.empty()) {
    *why = "its standby (pid " + std::to_string(s.pid) + ") " + ending;
    Drop(s, true);
    return std::nullopt;
  }
  const int room = fcntl(s.order_fd, F_GETPIPE_SZ);
  if (room < 0 || bytes.size() > static_cast<size_t>(room)) {
    *why = "its order (" + std::to_string(bytes.size()) + " bytes: the environment) is more "
           "than its pipe holds (" + std::to_string(room) + ")";
    Drop(s, true);
    return std::nullopt;
  }
  if (!WriteAll(s.order_fd, bytes)) {
    *why = "its standby (pid " + std::to_string(s.pid) + ") did not take its order: " +
           std::strerror(errno);
    Drop(s, true);
    return std::nullopt;
  }
  CloseFd(&s.order_fd);
  SpawnedChild child{s.pid, s.out_fd, s.err_fd};
  s.pid = -1;
  s.out_fd = s.err_fd = -1;
  return child;
}

void WarmPool::End(size_t i) {
  if (i < slots_.size()) Drop(slots_[i], true);
}

std::vector<pid_t> WarmPool::pids() const {
  std::vector<pid_t> out = killed_;
  for (const Slot& s : slots_)
    if (s.pid > 0) out.push_back(s.pid);
  return out;
}

std::vector<std::pair<int, double>> WarmPool::Resident() const {
  std::vector<std::pair<int, double>> out;
  static const long page = sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.pid <= 0) continue;
    const std::string statm =
        ReadNoFollow(AT_FDCWD, "/proc/" + std::to_string(s.pid) + "/statm", 256);
    unsigned long long size = 0, resident = 0;
    if (std::sscanf(statm.c_str(), "%llu %llu", &size, &resident) == 2)
      out.emplace_back(static_cast<int>(i), static_cast<double>(resident) * static_cast<double>(page));
  }
  return out;
}

bool WarmPool::Reaped(pid_t pid, int status, std::optional<size_t>* slot, std::string* why) {
  for (auto it = killed_.begin(); it != killed_.end(); ++it)
    if (*it == pid) {
      killed_.erase(it);
      return true;
    }
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].pid != pid) continue;
    *slot = i;
    *why = "its standby (pid " + std::to_string(pid) + ") ended: " + DescribeStatus(status);
    Drop(slots_[i], false);
    return true;
  }
  return false;
}

void WarmPool::Drop(Slot& s, bool kill_group) {
  if (kill_group && s.pid > 0) {
    // Out of the idle class first: killed there, it ends only when the
    // CPU is idle, and the shim waits for it before it exits.
    if (idle_) (void)LeaveIdleClass(s.pid);
    kill(-s.pid, SIGKILL);
    killed_.push_back(s.pid);
  }
  s.pid = -1;
  CloseFd(&s.order_fd);
  CloseFd(&s.out_fd);
  CloseFd(&s.err_fd);
}

void WarmPool::EndAll() {
  for (Slot& s : slots_) Drop(s, true);
}

}  // namespace aml
