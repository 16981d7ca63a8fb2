#include "shim/base/read_no_follow.h"

#include <sys/stat.h>
#include <unistd.h>

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
  std::string out(max, '\0');
  size_t got = 0;
  ssize_t n;
  while (got < max && (n = read(fd, out.data() + got, max - got)) > 0)
    got += static_cast<size_t>(n);
  close(fd);
  out.resize(got);
  return out;
}

}  // namespace aml
