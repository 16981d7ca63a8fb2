#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "shim/app.h"
#include "shim/preflight/nccl_worker.h"

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], aml::kNcclWorkerArg) == 0)
    return aml::NcclWorkerMain(aml::kNcclWorkerFd, std::atoi(argv[2]),
                               aml::EnvSnapshot::FromEnvp(environ));
  std::vector<std::string> args(argv + 1, argv + argc);
  return aml::Main(args, aml::EnvSnapshot::FromEnvp(environ));
}
