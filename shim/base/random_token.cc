#include "shim/base/random_token.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>

#include "shim/base/hex.h"

namespace aml {

std::string RandomToken() {
  unsigned char b[16] = {};
  // The system call, not glibc's getrandom() (GLIBC_2.25): the release
  // binary needs nothing newer than GLIBC_2.17 (docs/install.md, "Install").
  if (syscall(SYS_getrandom, b, sizeof b, 0) != static_cast<long>(sizeof b)) {
    auto t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
             (static_cast<uint64_t>(getpid()) << 32);
    std::memcpy(b, &t, sizeof t);
  }
  return Hex(b, sizeof b);
}

}  // namespace aml
