// Writing a file of aml-shim's own into its private directory: created anew
// (never one planted there, never through a symbolic link), 0600, whole or
// not at all.
#pragma once

#include <string>
#include <string_view>

#include "shim/base/result.h"

namespace aml {

// Writes all of `bytes` to `fd`, again after EINTR and short writes; false
// (errno set) when a write fails.
bool WriteAll(int fd, std::string_view bytes);

// Creates `path` (O_EXCL, O_NOFOLLOW, 0600) with `bytes`; on failure nothing
// is left there and the error names the path and why.
Status WriteNewFile(const std::string& path, std::string_view bytes);

}  // namespace aml
