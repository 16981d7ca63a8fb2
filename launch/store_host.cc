#include "launch/store_host.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launch/child.h"
#include "launch/idle_class.h"
#include "launch/store_host_py.h"
#include "launch/wait_status.h"
#include "shim/base/clock.h"
#include "shim/base/write_new_file.h"

namespace aml {
namespace {

constexpr int kHostFd = 3;  // its end of the socket, in the host

}  // namespace

StoreHost::~StoreHost() {
  if (fd_ >= 0) close(fd_);
}

std::string StoreHost::Start(const PythonCommand& command, const EnvSnapshot& env,
                             const std::string& dir, bool idle, std::string addr, int world,
                             pid_t* pid) {
  if (script_.empty()) {
    const std::string path = dir + "/store_host.py";
    Status st = WriteNewFile(path, std::string_view(kStoreHostPy, sizeof kStoreHostPy - 1));
    if (!st.ok()) return st.error().message;
    script_ = path;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return std::string("cannot make a socket pair: ") + std::strerror(errno);
  SpawnSpec spec;
  spec.env_sets.emplace_back("AML_SHIM_STORE_FD", std::to_string(kHostFd));
  spec.stdin_null = true;
  spec.stdout_to_stderr = true;
  spec.pass_fd = sv[1];
  spec.pass_as = kHostFd;
  spec.idle_class = idle;
  int code = 0;
  Result<SpawnedChild> spawned = Spawn(command.StandbyArgv(script_), env, spec, &code);
  close(sv[1]);
  if (!spawned.ok()) {
    close(sv[0]);
    return "the store host could not start: " + spawned.error().message;
  }
  pid_ = *pid = spawned->pid;
  fd_ = sv[0];
  idle_ = idle;
  addr_ = std::move(addr);
  world_ = world;
  return "";
}

std::string StoreHost::Line(double wait_s) {
  const double until = MonotonicSeconds() + wait_s;
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    const double left = until - MonotonicSeconds();
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, left > 0 ? static_cast<int>(left * 1000) + 1 : 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return "";
    char buf[512];
    const ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return "";  // it closed its end (ended)
    pending_.append(buf, static_cast<size_t>(n));
  }
}

bool StoreHost::Host(int port, std::string* why) {
  if (pid_ <= 0) {
    *why = "no store host";
    return false;
  }
  if (!ready_) {
    const std::string said = Line(0);
    if (said.empty()) {
      *why = "the store host (pid " + std::to_string(pid_) + ") is still importing torch";
      return false;
    }
    if (said != "ready") {
      *why = "the store host (pid " + std::to_string(pid_) + ") said: " + said;
      End();
      return false;
    }
    ready_ = true;
    if (idle_) {
      // Back to the normal classes for good: its store answers the ranks.
      Status back = LeaveIdleClass(pid_);
      if (!back.ok()) {
        *why = "the store host stayed in the idle class: " + back.error().message;
        End();
        return false;
      }
    }
  }
  const std::string ask =
      "host " + addr_ + " " + std::to_string(port) + " " + std::to_string(world_) + "\n";
  if (send(fd_, ask.data(), ask.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(ask.size())) {
    *why = "the store host (pid " + std::to_string(pid_) + ") took no order: " +
           std::strerror(errno);
    End();
    return false;
  }
  const std::string said = Line(kAnswerS);
  if (said == "ok " + std::to_string(port)) return true;
  *why = "the store host (pid " + std::to_string(pid_) + ") " +
         (said.empty() ? "did not open the store on port " + std::to_string(port) + " within " +
                             std::to_string(static_cast<int>(kAnswerS)) + " s"
                       : "said: " + said);
  End();
  return false;
}

bool StoreHost::Reaped(pid_t pid, int status, std::string* why) {
  if (pid <= 0) return false;
  if (pid == killed_) {
    killed_ = -1;
    return true;
  }
  if (pid != pid_) return false;
  *why = "the store host (pid " + std::to_string(pid) + ") ended: " + DescribeStatus(status);
  pid_ = -1;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  return true;
}

void StoreHost::End() {
  if (pid_ > 0) {
    if (idle_ && !ready_) (void)LeaveIdleClass(pid_);  // killed in the idle class, it lingers
    kill(-pid_, SIGKILL);
    killed_ = pid_;
  }
  pid_ = -1;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::vector<pid_t> StoreHost::pids() const {
  std::vector<pid_t> out;
  if (pid_ > 0) out.push_back(pid_);
  if (killed_ > 0) out.push_back(killed_);
  return out;
}

}  // namespace aml
