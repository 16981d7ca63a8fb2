#include <unistd.h>

#include <cstring>

#include "shim/app.h"
#include "shim/preflight/nccl_worker.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], aml::kNcclWorkerArg) == 0)
    return aml::NcclWorkerMain(aml::kNcclWorkerFd, aml::EnvSnapshot::FromEnvp(environ));
  std::vector<std::string> args(argv + 1, argv + argc);
  return aml::Main(args, aml::EnvSnapshot::FromEnvp(environ));
}
