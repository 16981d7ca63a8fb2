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

// A private directory (0700) for the error files when there is no
// --log-dir, under `tmp_dir` ($TMPDIR; "" for /tmp); removed with what is in
// it by RemoveErrorDir.
std::optional<std::string> MakeErrorDir(const std::string& tmp_dir);
void RemoveErrorDir(const std::string& dir);

}  // namespace aml
