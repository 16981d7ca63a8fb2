#include <unistd.h>

#include "shim/app.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return aml::Main(args, aml::EnvSnapshot::FromEnvp(environ));
}
