#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <cstdlib>
#include <cstring>

#include "shim/app.h"
#include "shim/preflight/nccl_worker.h"

int main(int argc, char** argv) {
  // Descriptors 0, 1 and 2 are valid before any other is opened: started
  // with them closed, the keeper's pipe or a log file would otherwise become
  // "stdout" or "stderr", and whatever aml-shim or a child writes there
  // would land in it (a security fix: a child's bytes were read as a
  // process group to kill). A closed one reads and writes /dev/null.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int null_fd = open("/dev/null", O_RDWR);  // the lowest free descriptor: fd
    if (null_fd != fd) _exit(125);
  }
  if (argc == 3 && std::strcmp(argv[1], aml::kNcclWorkerArg) == 0)
    return aml::NcclWorkerMain(aml::kNcclWorkerFd, std::atoi(argv[2]),
                               aml::EnvSnapshot::FromEnvp(environ));
  std::vector<std::string> args(argv + 1, argv + argc);
  return aml::Main(args, aml::EnvSnapshot::FromEnvp(environ));
}
