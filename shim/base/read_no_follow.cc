#include "shim/base/read_no_follow.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace aml {

std::string ReadNoFollow(int dir_fd, const std::string& name, size_t max) {
  int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  // Only a regular file of this user: in a directory others can write, a
  // file they planted is not ours to believe.
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    close(fd);
    return "";
  }
  // The buffer follows the file (its size as it is now, doubled while it
  // grows), never `max` up front: a 64 MiB cap on a 2 KiB file would zero
  // 64 MiB, seconds of a loaded node's time in its event loop.
  const size_t first = std::min(max, st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1
                                                    : size_t{4096});
  std::string out;
  size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      if (out.size() >= max) break;
      out.resize(std::min(max, std::max(first, out.size() * 2)));
    }
    const ssize_t n = read(fd, out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);
  return out;
}

}  // namespace aml
