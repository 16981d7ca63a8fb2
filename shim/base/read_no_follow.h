// Reading a file another process may have planted or replaced: never through
// a symbolic link, never blocking on a FIFO, never more than asked for, never
// a file another user owns.
#pragma once

#include <fcntl.h>

#include <cstddef>
#include <string>

namespace aml {

// Up to `max` bytes of `name` (relative to `dir_fd`, or AT_FDCWD for a path);
// "" when it cannot be opened (absent, a link, unreadable) or is not a
// regular file owned by this process's effective user.
std::string ReadNoFollow(int dir_fd, const std::string& name, size_t max);

}  // namespace aml
