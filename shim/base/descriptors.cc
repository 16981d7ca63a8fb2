#include "shim/base/descriptors.h"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>
#include <cstdlib>

namespace aml {

std::vector<int> OpenDescriptors() {
  std::vector<int> out;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return out;
  const int listing = dirfd(dir);
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == listing) continue;
    out.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

int CloseOnExecSince(const std::vector<int>& before) {
  int marked = 0;
  for (int fd : OpenDescriptors()) {
    if (std::binary_search(before.begin(), before.end(), fd)) continue;
    const int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || (flags & FD_CLOEXEC)) continue;
    if (fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0) ++marked;
  }
  return marked;
}

}  // namespace aml
