#include "launch/child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launch/exec.h"
#include "launch/idle_class.h"
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

namespace {

// What the child does between vfork and exec, from pointers prepared before
// the vfork: no allocation, no lock, nothing but system calls (the parent's
// memory is shared, and the parent waits until the exec).
struct ChildSteps {
  int out = -1, err = -1;         // dup'ed to 1 and 2
  bool stdout_to_stderr = false;
  bool stdin_null = false;
  int pass_fd = -1, pass_as = -1;
  bool own_process_group = true;
  bool search_path = true;
  bool idle_class = false;
  const char* file = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

[[noreturn]] void RunChild(const ChildSteps& c, volatile int* exec_errno) {
  // Nothing in aml-shim installs a signal handler (it reads signals from a
  // signalfd), so exec leaves every disposition as it is: only the ones the
  // supervisor ignores go back to their default, and signals ignored by
  // aml-shim's own parent (nohup) stay ignored, as exec(2) would leave them.
  // (posix_spawn asked the kernel about all 64 signals in every child.)
  for (int sig : {SIGPIPE, SIGTTOU, SIGXFSZ}) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  if (c.own_process_group && setpgid(0, 0) != 0) *exec_errno = errno;
  if (c.out >= 0 && dup2(c.out, STDOUT_FILENO) < 0) *exec_errno = errno;
  if (c.err >= 0 && dup2(c.err, STDERR_FILENO) < 0) *exec_errno = errno;
  if (c.stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) *exec_errno = errno;
  if (c.stdin_null) {
    const int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, STDIN_FILENO) < 0) *exec_errno = errno;
    if (null > STDIN_FILENO) close(null);
  }
  if (c.pass_fd >= 0) {
    // dup2 onto itself keeps close-on-exec: clear it instead.
    if (c.pass_fd == c.pass_as ? fcntl(c.pass_fd, F_SETFD, 0) != 0
                               : dup2(c.pass_fd, c.pass_as) < 0)
      *exec_errno = errno;
  }
  if (c.idle_class) EnterIdleClassInChild();
  if (*exec_errno == 0) {
    if (c.search_path) execvpe(c.file, c.argv, c.envp);
    else execve(c.file, c.argv, c.envp);
    *exec_errno = errno;
  }
  _exit(127);
}

// vfork and exec: the error is the exec's errno (0 when it ran).
int StartChild(const ChildSteps& steps, pid_t* pid) {
  volatile int exec_errno = 0;
  const pid_t child = vfork();
  if (child < 0) return errno;
  if (child == 0) RunChild(steps, &exec_errno);
  // The child has exec'd, or failed and exited: reap a failed one.
  if (exec_errno != 0) {
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    return exec_errno;
  }
  *pid = child;
  return 0;
}

}  // namespace

Result<SpawnedChild> Spawn(const std::vector<std::string>& argv, const EnvSnapshot& env,
                           const SpawnSpec& spec, int* failure_exit_code) {
  *failure_exit_code = kExitShimFailure;
  const bool pipe_output = spec.pipe_output;
  Pipe out, err;
  if (pipe_output &&
      (pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0))
    return Error{std::string("cannot create a pipe: ") + std::strerror(errno)};
  ChildSteps steps;
  steps.out = out.fd[1];
  steps.err = err.fd[1];
  steps.stdout_to_stderr = !pipe_output && spec.stdout_to_stderr;
  steps.stdin_null = spec.stdin_null;
  steps.pass_fd = spec.pass_fd;
  steps.pass_as = spec.pass_as;
  steps.own_process_group = spec.own_process_group;
  steps.search_path = spec.search_path;
  steps.idle_class = spec.idle_class;
  CArgs args(argv);
  CArgs envp(env, spec.env_sets);
  steps.file = args.first();
  steps.argv = args.data();
  steps.envp = envp.data();
  pid_t pid = -1;
  // execvpe searches this process's PATH, which is the user's. The child
  // gets the file limit aml-shim was started with.
  OriginalFdLimit limit;
  int rc = StartChild(steps, &pid);
  if (rc == ENOEXEC) {
    // An executable file that is no binary and has no "#!": execvp (and so
    // aml-shim's exec in place, env(1) and shells) runs it with /bin/sh;
    // a bare execve does not. The same command runs the same way either way.
    const std::string file = spec.search_path ? FoundOnPath(argv[0]) : argv[0];
    std::vector<std::string> sh_argv{"/bin/sh", file};
    sh_argv.insert(sh_argv.end(), argv.begin() + 1, argv.end());
    CArgs sh_args(sh_argv);
    steps.file = "/bin/sh";
    steps.argv = sh_args.data();
    steps.search_path = false;
    if (!file.empty()) rc = StartChild(steps, &pid);
  }
  if (rc != 0) {
    std::string message;
    *failure_exit_code = ExecFailureCode(rc, argv[0], &message);
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
    // Read ends (O_RDONLY): the status flags are O_NONBLOCK alone. The
    // reader enlarges a pipe it finds full (launch/supervisor.cc).
    for (int fd : {child.out_fd, child.err_fd}) fcntl(fd, F_SETFL, O_NONBLOCK);
  }
  return child;
}

Result<SpawnedChild> SpawnChild(const std::vector<std::string>& argv, const EnvSnapshot& env,
                                const EnvSets& sets, bool pipe_output, int* failure_exit_code) {
  SpawnSpec spec;
  spec.env_sets = sets;
  spec.pipe_output = pipe_output;
  return Spawn(argv, env, spec, failure_exit_code);
}

}  // namespace aml
