#include "launch/child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launch/exec.h"
#include "shim/base/fd_limit.h"

namespace aml {
namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
};

}  // namespace

std::string FoundOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/bin:/usr/bin";
  size_t start = 0;
  for (;;) {
    const size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string file = (dir.empty() ? "." : dir) + "/" + name;
    if (access(file.c_str(), X_OK) == 0) return file;
    if (end == std::string::npos) return "";
    start = end + 1;
  }
}

Result<SpawnedChild> Spawn(const SpawnSpec& spec, int* failure_exit_code) {
  *failure_exit_code = kExitShimFailure;
  const bool pipe_output = spec.pipe_output;
  Pipe out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (pipe_output) {
    if (pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0) {
      posix_spawn_file_actions_destroy(&actions);
      return Error{std::string("cannot create a pipe: ") + std::strerror(errno)};
    }
    posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  } else if (spec.stdout_to_stderr) {
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  }
  if (spec.stdin_null)
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (spec.pass_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, spec.pass_fd, spec.pass_as);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with an empty mask (the supervisor blocks the signals
  // it reads from its signalfd) and default dispositions for the signals the
  // supervisor ignores. Signals ignored by aml-shim's own parent (nohup)
  // stay ignored, as exec(2) would leave them.
  sigset_t empty, changed;
  sigemptyset(&empty);
  sigemptyset(&changed);
  sigaddset(&changed, SIGPIPE);
  sigaddset(&changed, SIGTTOU);
  sigaddset(&changed, SIGXFSZ);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &changed);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (spec.own_process_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  CArgs args(spec.argv);
  CArgs envp(spec.env.ToStrings());
  pid_t pid = -1;
  // posix_spawnp searches this process's PATH, which is the user's. The
  // child gets the file limit aml-shim was started with.
  OriginalFdLimit limit;
  int rc = spec.search_path
               ? posix_spawnp(&pid, args.ptrs[0], &actions, &attr, args.data(), envp.data())
               : posix_spawn(&pid, args.ptrs[0], &actions, &attr, args.data(), envp.data());
  if (rc == ENOEXEC) {
    // An executable file that is no binary and has no "#!": execvp (and so
    // aml-shim's exec in place, env(1) and shells) runs it with /bin/sh;
    // posix_spawn does not. The same command runs the same way either way.
    const std::string file = spec.search_path ? FoundOnPath(spec.argv[0]) : spec.argv[0];
    std::vector<std::string> sh_argv{"/bin/sh", file};
    sh_argv.insert(sh_argv.end(), spec.argv.begin() + 1, spec.argv.end());
    CArgs sh_args(sh_argv);
    if (!file.empty())
      rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, sh_args.data(), envp.data());
  }
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::string message;
    *failure_exit_code = ExecFailureCode(rc, spec.argv[0], &message);
    return Error{message};
  }
  SpawnedChild child;
  child.pid = pid;
  if (pipe_output) {
    close(out.fd[1]);
    close(err.fd[1]);
    out.fd[1] = err.fd[1] = -1;
    child.out_fd = out.fd[0];
    child.err_fd = err.fd[0];
    out.fd[0] = err.fd[0] = -1;
    for (int fd : {child.out_fd, child.err_fd}) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      // Larger pipes: fewer wake-ups for chatty ranks (best effort).
      fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    }
  }
  return child;
}

Result<SpawnedChild> SpawnChild(const std::vector<std::string>& argv,
                                const EnvSnapshot& env, bool pipe_output,
                                int* failure_exit_code) {
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.pipe_output = pipe_output;
  return Spawn(spec, failure_exit_code);
}

}  // namespace aml
