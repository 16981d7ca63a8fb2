#include "launch/wait_status.h"

#include <sys/wait.h>

#include <csignal>

namespace aml {

std::string SignalName(int sig) {
  static const struct {
    int sig;
    const char* name;
  } names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
               {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
               {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
               {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
               {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
               {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
               {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
               {SIGTTOU, "SIGTTOU"}, {SIGCONT, "SIGCONT"}, {SIGCHLD, "SIGCHLD"}};
  for (const auto& n : names)
    if (n.sig == sig) return n.name;
  return "signal " + std::to_string(sig);
}

int ExitCodeFor(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 125;
}

std::string DescribeStatus(int st) {
  if (WIFEXITED(st)) return "exit status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    std::string s = "signal " + std::to_string(WTERMSIG(st)) + " (" +
                    SignalName(WTERMSIG(st)) + ")";
    if (WCOREDUMP(st)) s += ", core dumped";
    return s;
  }
  return "unknown status " + std::to_string(st);
}

std::string HowItEnded(int st) {
  if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return "was killed by " + DescribeStatus(st);
  return "stopped";
}

}  // namespace aml
