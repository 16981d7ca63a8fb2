#include "launch/warm_check.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launch/child.h"
#include "launch/wait_status.h"
#include "launch/warm_command.h"
#include "shim/base/clock.h"
#include "shim/base/text_list.h"

namespace aml {
namespace {

// Prints each name (argv) whose top-level package the interpreter cannot find.
constexpr char kFind[] =
    "import importlib.util, sys\n"
    "for m in sys.argv[1:]:\n"
    "    if importlib.util.find_spec(m.split('.')[0]) is None: print(m)\n";

}  // namespace

Status CheckWarmPreload(const std::vector<std::string>& argv, const EnvSnapshot& env,
                        const std::string& modules, double within_s) {
  Result<PythonCommand> command = ParsePythonCommand(argv);
  if (!command.ok()) return Ok();  // cold, said at its start
  std::vector<std::string> check = {command->interpreter};
  check.insert(check.end(), command->flags.begin(), command->flags.end());
  check.push_back("-c");
  check.push_back(kFind);
  for (const std::string& m : SplitFields(modules, ','))
    if (!m.empty()) check.push_back(m);
  SpawnSpec spec;
  spec.pipe_output = true;
  spec.stdin_null = true;
  int code = 0;
  Result<SpawnedChild> child = Spawn(check, env, spec, &code);
  if (!child.ok())
    return Error{"--warm-restart: the rank's interpreter cannot start its standby: " +
                 child.error().message};
  std::string out, err;
  const double deadline = MonotonicSeconds() + within_s;
  pollfd fds[2] = {{child->out_fd, POLLIN, 0}, {child->err_fd, POLLIN, 0}};
  int open_fds = 2, status = 0;
  bool ended = false;
  while (!ended) {
    const double left = deadline - MonotonicSeconds();
    if (left <= 0) break;
    if (open_fds == 0) {  // its output closed: it is ending
      if (waitpid(child->pid, &status, WNOHANG) == child->pid) ended = true;
      else usleep(10000);
      continue;
    }
    if (poll(fds, 2, static_cast<int>(left * 1000) + 1) < 0 && errno != EINTR) break;
    for (pollfd& f : fds) {
      if (f.fd < 0 || !f.revents) continue;
      char buf[4096];
      const ssize_t n = read(f.fd, buf, sizeof buf);
      if (n > 0) {
        std::string& into = &f == &fds[0] ? out : err;
        if (into.size() < 65536) into.append(buf, n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (!ended) {
    kill(-child->pid, SIGKILL);
    waitpid(child->pid, &status, 0);
    return Error{"--warm-restart: " + command->interpreter + " did not say within " +
                 std::to_string(static_cast<int>(within_s)) +
                 " s whether it finds --preload's modules (" + modules + ")"};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::vector<std::string> said = SplitLines(err);
    while (!said.empty() && said.back().empty()) said.pop_back();
    return Error{"--warm-restart: " + command->interpreter + " could not look for --preload's "
                 "modules (" + DescribeStatus(status) +
                 (said.empty() ? "" : ": " + said.back()) + ")"};
  }
  const std::vector<std::string> missing = SplitLines(out);
  if (!missing.empty())
    return Error{"--preload=" + modules + ": " + command->interpreter + " finds no module " +
                 JoinCapped(missing, missing.size()) +
                 " (in the rank's environment): a standby could not import it"};
  return Ok();
}

}  // namespace aml
