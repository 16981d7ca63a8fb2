// TORCHELASTIC_ERROR_FILE (docs/torchrun.md, "torchrun's variables"): under
// supervision each child gets its own file, where torch's @record (and
// torchrun-aware code) writes the exception that ended it; the failure
// summary and failure.json then show it.
#pragma once

#include <optional>
#include <string>

namespace aml {

struct RecordedError {
  std::string message;    // "ValueError: bad shard"
  std::string traceback;  // Python's, as recorded
};

// The error file's path for `rank` in `dir`.
std::string ErrorFilePath(const std::string& dir, int rank);

// Reads torch's error file at `path` without following a link, at most
// 256 KiB; nothing when absent or not torch's format.
std::optional<RecordedError> ReadErrorFile(const std::string& path);

// The error files live in a private directory (0700) under `tmp_dir`
// ($TMPDIR; "" for /dev/shm, a sticky directory this user can write, else
// /tmp), never in --log-dir, which another user may be able
// to write (a link planted there would be followed by torch's @record); they
// are copied into --log-dir (launch/log_dir.h). ErrorDirName picks a name
// nobody can guess (128 random bits), so that the keeper can be told it
// before it exists (a shim killed at any moment leaves nothing behind);
// MakeErrorDir makes it (false when it exists already, or cannot be made);
// RemoveErrorDir removes it with what is in it.
std::string ErrorDirName(const std::string& tmp_dir);
// How deep the directory's own folders go below it: the flight recorder's
// python/ (its agent) with the python/__pycache__/ the interpreter writes
// there, and fr-N/ (an attempt's pipes and dumps). The shim and its keeper
// (keeper.cc) remove that deep; never through a link.
constexpr int kErrorDirDepth = 2;
bool MakeErrorDir(const std::string& dir);
void RemoveErrorDir(const std::string& dir);

// The error file's content at `path` (at most 256 KiB, never through a
// link); "" when there is none.
std::string ReadErrorFileText(const std::string& path);

}  // namespace aml
