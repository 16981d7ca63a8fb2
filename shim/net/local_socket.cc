#include "shim/net/local_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aml {
namespace {

constexpr size_t kMaxName = 100;

Result<socklen_t> Address(const std::string& name, sockaddr_un* a) {
  if (name.empty() || name.size() > kMaxName || name.size() + 1 > sizeof a->sun_path)
    return Error{"local socket name '" + name + "' is empty or too long"};
  std::memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  std::memcpy(a->sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

Result<Fd> Socket() {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return Error{std::string("socket(AF_UNIX): ") + std::strerror(errno)};
  return Fd(s);
}

}  // namespace

Result<Fd> ListenLocal(const std::string& name) {
  sockaddr_un a;
  auto len = Address(name, &a);
  if (!len.ok()) return len.error();
  auto fd = Socket();
  if (!fd.ok()) return fd.error();
  if (bind(fd->get(), reinterpret_cast<sockaddr*>(&a), *len) != 0 ||
      listen(fd->get(), SOMAXCONN) != 0)
    return Error{"local socket '@" + name + "': " + std::strerror(errno)};
  return fd;
}

Result<Fd> ConnectLocal(const std::string& name, int* error_code) {
  sockaddr_un a;
  auto len = Address(name, &a);
  if (!len.ok()) return len.error();
  auto fd = Socket();
  if (!fd.ok()) return fd.error();
  if (connect(fd->get(), reinterpret_cast<sockaddr*>(&a), *len) != 0) {
    const int e = errno;
    if (error_code) *error_code = e;
    return Error{"local socket '@" + name + "': " + std::strerror(e)};
  }
  return fd;
}

bool PeerIsSameUser(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid();
}

}  // namespace aml
