// For tests only: a port for a server a test starts and closes, then binds
// again (or has another process bind). Not from the kernel's ephemeral range
// (32768-60999 here), where any process's outgoing connection or bind to
// port 0 may take it meanwhile (a unit test's rank 0 could not listen on a
// port it had found free, under a CI run's load), and not from the shim's
// derived MASTER_PORTs (20000-31999, shim/world/port.h): from 10000-19999,
// each reserved across test processes by a file created with O_EXCL in
// $TMPDIR/aml-shim-test-ports-<uid>, the same reservations as the
// end-to-end tests' free_port() (tests/e2e/harness.py).
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <random>
#include <string>

#include "shim/net/tcp.h"

namespace aml {

inline bool TestPortBinds(int port) {
  for (const char* any : {"0.0.0.0", "::"}) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    NumericSockaddr(any, port, &ss, &len);
    const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;  // (no IPv6 here: the IPv4 bind decides)
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
    close(fd);
    if (!ok) return false;
  }
  return true;
}

// 0 when none could be had (the test then fails to listen, and says so).
inline int ReservedTestPort() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/aml-shim-test-ports-" +
                          std::to_string(getuid());
  mkdir(dir.c_str(), 0700);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) return 0;
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(10000, 19999);
  for (int i = 0; i < 1000; ++i) {
    const int port = pick(rng);
    const std::string mark = dir + "/" + std::to_string(port);
    const int fd = open(mark.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (lstat(mark.c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime > 3 * 3600)
        unlink(mark.c_str());  // a reservation of a run long over
      continue;
    }
    close(fd);
    if (TestPortBinds(port)) return port;
  }
  return 0;
}

}  // namespace aml
