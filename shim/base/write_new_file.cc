#include "shim/base/write_new_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aml {

bool WriteAll(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    if (w == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<size_t>(w);
  }
  return true;
}

Status WriteNewFile(const std::string& path, std::string_view bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Error{"cannot write " + path + ": " + std::strerror(errno)};
  const bool ok = WriteAll(fd, bytes);
  const int e = errno;
  close(fd);
  if (!ok) {
    unlink(path.c_str());
    return Error{"cannot write " + path + ": " + std::strerror(e)};
  }
  return Ok();
}

}  // namespace aml
