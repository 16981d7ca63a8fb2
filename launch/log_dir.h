// --log-dir (docs/supervision.md, "Per-node launch and supervision"): each rank's stdout and
// stderr as rank-R.stdout / rank-R.stderr, and failure.json.
//
// - Everything is opened before any child starts; a directory or file that
//   cannot be used is an error (exit 125), never a warning.
// - No path is followed through a symbolic link: the directory itself must
//   not be one, and each file is opened relative to it with O_NOFOLLOW; an
//   existing file is reused only if it is a regular file of ours with one
//   link, so a planted link or hard link cannot redirect a write.
// - Each rank file is locked (flock) while the job runs: a second live job on
//   the same files is refused, naming them.
// - A write that fails (a full disk) is reported at once and again at the
//   end; that stream is not logged further.
// - failure.json is written whole (temporary file + rename) and carries the
//   run it describes and its stamp (launch/record_fence.h: the root's term,
//   who wrote it, whether it held the job). Writers of one run are fenced
//   under an flock on DIR itself: a holder's record replaces a part's
//   and an older term's, never a newer term's; a part's record (a shim cut
//   off) is written only where none of the run stands. A failure.json of an
//   earlier run is replaced, and removed at the start of a run if it is not
//   this run's and was written before this shim started.
// - A shim that lost the job (no majority, or stepped down for a newer
//   root) writes its word to failure.shim-K.json, never to failure.json.
#pragma once

#include <time.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launch/record_fence.h"
#include "shim/base/result.h"

namespace aml {

class LogDir {
 public:
  // `failure_prefix`: what this run's failure.json begins with;
  // `shim_started`: when this shim started (CLOCK_REALTIME).
  static Result<std::unique_ptr<LogDir>> Open(const std::string& path, const std::vector<int>& ranks,
                                              std::string failure_prefix, timespec shim_started);
  ~LogDir();
  LogDir(const LogDir&) = delete;
  LogDir& operator=(const LogDir&) = delete;

  // This node's ranks changed (--spares: a spare took a retired node's
  // NODE_RANK, or this node was retired and has none): the old ranks' files
  // are closed and the new ones opened to append, so that what an earlier
  // holder wrote there stays. A file still locked by the node that held it
  // (it lets go as it takes the same restart order) is waited for, 0.1 s at
  // most (the supervisor's loop and its links wait meanwhile); past that
  // (the node that held it was lost, and is frozen perhaps) it is appended
  // to without the lock, with a warning. The error names the file.
  Status Reassign(const std::vector<int>& ranks);
  // Appends to the log of the `index`-th rank given to Open (or Reassign).
  void Append(size_t index, bool is_stderr, std::string_view data);
  // "rank-0.stdout (No space left on device)" for each log that lost bytes.
  const std::vector<std::string>& losses() const { return losses_; }
  // Writes failure.json (see above), `json` stamped with `stamp`;
  // `*kept`: the fence kept a record that stands (a newer term's, or a
  // part's of the run when this is a part's too). The error names the path.
  Status WriteFailure(const std::string& json, const RecordStamp& stamp = {},
                      bool* kept = nullptr);
  // The job ended well (`json`: record_fence.h's EndedWellJson): written as
  // the job's word by its root (WritesEndedWell), fenced as any record.
  Status WriteEndedWell(const std::string& json, const RecordStamp& stamp);
  // failure.shim-K.json, whole: the word of a shim that does not hold the job.
  Status WriteNodeRecord(int shim, const std::string& json);
  // Writes rank-R.stack whole (temporary file + rename: a planted link is
  // replaced, never followed); the error names the path.
  Status WriteStack(int rank, const std::string& text);
  // Writes `name` (a plain file name: a rank's flight record) whole, the
  // same way; the error names the path.
  Status KeepFile(const std::string& name, std::string_view data);
  // Copies a rank's error file (launch/error_file.h) in as
  // rank-R.error.json, the same way; empty `text`: removes it (a stale one
  // would be read as the next attempt's).
  Status CopyErrorFile(int rank, const std::string& text);
  const std::string& path() const { return path_; }

 private:
  LogDir() = default;
  // `fresh`: truncate it (a new run); else append, and `*unlocked` when
  // another holds its lock.
  Status OpenRankFile(const std::string& name, int* fd, bool fresh = true,
                      bool* unlocked = nullptr);
  void CloseRankFiles();
  Result<std::string> WriteTemp(const std::string& name, std::string_view data, bool sync);
  // `text` as `name`, whole: a temporary file renamed over it (a planted link
  // is replaced, never followed).
  Status ReplaceWhole(const std::string& name, const std::string& text, bool sync = false);
  void RemoveStaleFailure(timespec shim_started);
  std::string path_;
  std::string failure_prefix_;
  int dir_fd_ = -1;
  struct Files {
    std::string name[2];
    int fd[2] = {-1, -1};
  };
  std::vector<Files> files_;
  std::vector<std::string> losses_;
};

}  // namespace aml
