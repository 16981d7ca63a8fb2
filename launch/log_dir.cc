#include "launch/log_dir.h"

#include <climits>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "shim/base/log.h"
#include "shim/base/random_token.h"
#include "shim/base/read_no_follow.h"

namespace aml {
namespace {

constexpr char kFailure[] = "failure.json";
constexpr int kLockWaitMs = 100;  // Reassign: for a rank file's last holder to let go

std::string Why(int e) { return std::strerror(e); }

bool WriteWhole(int fd, std::string_view data, int* err) {
  while (!data.empty()) {
    ssize_t w = write(fd, data.data(), data.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *err = w < 0 ? errno : ENOSPC;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

}  // namespace

void LogDir::CloseRankFiles() {
  for (Files& f : files_)
    for (int fd : f.fd)
      if (fd >= 0) close(fd);
  files_.clear();
}

Status LogDir::Reassign(const std::vector<int>& ranks) {
  CloseRankFiles();
  std::vector<std::pair<int, std::string>> unlocked;  // (fd, name)
  for (int rank : ranks) {
    Files f;
    f.name[0] = "rank-" + std::to_string(rank) + ".stdout";
    f.name[1] = "rank-" + std::to_string(rank) + ".stderr";
    files_.push_back(f);
    for (int i = 0; i < 2; ++i) {
      bool held = false;
      Status st = OpenRankFile(files_.back().name[i], &files_.back().fd[i], false, &held);
      if (!st.ok()) return Error{"--log-dir " + path_ + ": " + st.error().message};
      if (held) unlocked.emplace_back(files_.back().fd[i], files_.back().name[i]);
    }
  }
  // Their last holder lets go as it takes the same restart order: a moment
  // (the supervisor's loop waits here, kLockWaitMs at most). One that still
  // holds them was lost to the control plane (a frozen node keeps its
  // locks): this job's files are appended to without the lock rather than
  // not at all.
  for (int waited = 0; !unlocked.empty() && waited < kLockWaitMs; waited += 10) {
    usleep(10000);
    unlocked.erase(std::remove_if(unlocked.begin(), unlocked.end(),
                                  [](const auto& u) { return flock(u.first, LOCK_EX | LOCK_NB) == 0; }),
                   unlocked.end());
  }
  if (!unlocked.empty()) {
    std::string names;
    for (const auto& u : unlocked) names += (names.empty() ? "" : ", ") + u.second;
    LogWarning("--log-dir " + path_ + ": " + names + " still locked by their last holder (a node "
               "the job lost, frozen perhaps): this node appends to them without the lock");
  }
  return Ok();
}

LogDir::~LogDir() {
  for (Files& f : files_)
    for (int fd : f.fd)
      if (fd >= 0) close(fd);
  if (dir_fd_ >= 0) close(dir_fd_);
}

Result<std::unique_ptr<LogDir>> LogDir::Open(const std::string& given, const std::vector<int>& ranks,
                                             std::string failure_prefix,
                                             timespec shim_started) {
  std::unique_ptr<LogDir> d(new LogDir());
  const std::string what = "--log-dir='" + given + "'";
  // "dir/", "dir/." and "dir//" name dir itself, but resolve it when it is a
  // link: O_NOFOLLOW applies only to the last component, so it must be dir.
  std::string path = given;
  for (;;) {
    if (path.size() > 1 && path.back() == '/') path.pop_back();
    else if (path.size() > 2 && path.compare(path.size() - 2, 2, "/.") == 0) path.resize(path.size() - 2);
    else break;
  }
  // Absolute, so that TORCHELASTIC_ERROR_FILE holds wherever a rank cds to.
  if (path[0] != '/') {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return Error{what + ": cannot read the current directory: " + Why(errno)};
    path = std::string(cwd) + (std::string(cwd) == "/" ? "" : "/") + (path == "." ? "" : path);
    if (path.size() > 1 && path.back() == '/') path.pop_back();
  }
  d->path_ = path;
  d->failure_prefix_ = std::move(failure_prefix);
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    return Error{what + ": cannot create it: " + Why(errno)};
  d->dir_fd_ = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d->dir_fd_ < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      struct stat st {};
      if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
        return Error{what + " is a symbolic link; aml-shim writes logs only into a real "
                     "directory: give the directory it points to"};
      return Error{what + " is not a directory"};
    }
    return Error{what + ": cannot open it: " + Why(errno)};
  }
  if (faccessat(d->dir_fd_, ".", W_OK | X_OK, AT_EACCESS) != 0)
    return Error{what + ": cannot write into it: " + Why(errno)};
  struct stat dir_st {};
  char mode[8];
  if (fstat(d->dir_fd_, &dir_st) == 0 && (dir_st.st_mode & (S_IWGRP | S_IWOTH)) &&
      !(dir_st.st_mode & S_ISVTX) &&
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(dir_st.st_mode & 07777)) > 0)
    LogWarning(what + " can be written by other users (mode " + std::string(mode) +
               ", not sticky): one of them can delete or replace the logs (aml-shim "
               "writes nothing through a link and reads back only files of its own "
               "user); prefer a directory only you can write");
  for (int rank : ranks) {
    Files f;
    f.name[0] = "rank-" + std::to_string(rank) + ".stdout";
    f.name[1] = "rank-" + std::to_string(rank) + ".stderr";
    d->files_.push_back(f);
    for (int i = 0; i < 2; ++i) {
      Status st = d->OpenRankFile(d->files_.back().name[i], &d->files_.back().fd[i]);
      if (!st.ok()) return Error{what + ": " + st.error().message};
    }
    // An earlier run's error file (or a link planted in its place) must not
    // be read as this run's, nor written through by the child.
    const std::string error_file = "rank-" + std::to_string(rank) + ".error.json";
    unlinkat(d->dir_fd_, error_file.c_str(), 0);
  }
  d->RemoveStaleFailure(shim_started);
  return d;
}

Status LogDir::OpenRankFile(const std::string& name, int* out, bool fresh, bool* unlocked) {
  const char* n = name.c_str();
  int fd = openat(dir_fd_, n, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ELOOP)
    return Error{name + " is a symbolic link: aml-shim does not write through links; remove it"};
  if (fd < 0 && errno != ENOENT) return Error{"cannot open " + name + ": " + Why(errno)};
  if (fd < 0) {
    fd = openat(dir_fd_, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST)
      return Error{name + " appeared while aml-shim created it: another job is starting "
                   "with the same --log-dir; give each job its own"};
    if (fd < 0) return Error{"cannot create " + name + ": " + Why(errno)};
  } else {
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
        st.st_uid != geteuid()) {
      close(fd);
      return Error{name + " exists and is not a regular file of this user with one link; "
                   "aml-shim does not overwrite it: remove it"};
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (!fresh && e == EWOULDBLOCK) {
      // Taking over another node's ranks: that node lets go of their files
      // as it takes the same restart order (Reassign waits a moment for it).
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND);
      *out = fd;
      *unlocked = true;
      return Ok();
    }
    close(fd);
    if (e == EWOULDBLOCK)
      return Error{name + " is being written by another running aml-shim job; give each job "
                   "its own --log-dir"};
    return Error{"cannot lock " + name + ": " + Why(e)};
  }
  if (!fresh) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_APPEND);
    *out = fd;
    return Ok();
  }
  if (ftruncate(fd, 0) != 0) {
    int e = errno;
    close(fd);
    return Error{"cannot truncate " + name + ": " + Why(e)};
  }
  *out = fd;
  return Ok();
}

void LogDir::RemoveStaleFailure(timespec shim_started) {
  struct stat st {};
  if (fstatat(dir_fd_, kFailure, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  // Another node of this run may already have written it: keep that one.
  if (S_ISREG(st.st_mode) && ReadNoFollow(dir_fd_, kFailure, failure_prefix_.size()) == failure_prefix_)
    return;
  // Written after this shim started, by a shim of this job that could not
  // name the job (no launcher job id): keep it too.
  if (st.st_mtim.tv_sec > shim_started.tv_sec ||
      (st.st_mtim.tv_sec == shim_started.tv_sec && st.st_mtim.tv_nsec >= shim_started.tv_nsec))
    return;
  unlinkat(dir_fd_, kFailure, 0);
}

void LogDir::Append(size_t index, bool is_stderr, std::string_view data) {
  if (index >= files_.size()) return;  // a rank whose file could not be taken over
  int& fd = files_[index].fd[is_stderr ? 1 : 0];
  if (fd < 0) return;
  int err = 0;
  if (WriteWhole(fd, data, &err)) return;
  const std::string& name = files_[index].name[is_stderr ? 1 : 0];
  LogWarning("--log-dir: cannot write " + path_ + "/" + name + ": " + Why(err) +
             "; the rest of it is not logged");
  losses_.push_back(name + " (" + Why(err) + ")");
  close(fd);
  fd = -1;
}

// DIR/.NAME.PID.tmp written whole (fsync'd when `sync`), never through a
// link; the caller puts it in place. Returns its name; errors name DIR/NAME.
Result<std::string> LogDir::WriteTemp(const std::string& name, std::string_view data, bool sync) {
  // A name nobody can guess (128 random bits): one planted at a predictable
  // name (a link, a file) is neither followed nor able to block the write.
  const std::string tmp = "." + name + "." + std::to_string(getpid()) + "." + RandomToken() + ".tmp";
  int fd = openat(dir_fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot write " + path_ + "/" + name + ": " + Why(errno)};
  int err = 0;
  bool ok = WriteWhole(fd, data, &err) && (!sync || fsync(fd) == 0 || (err = errno, false));
  close(fd);
  if (!ok) {
    unlinkat(dir_fd_, tmp.c_str(), 0);
    return Error{"cannot write " + path_ + "/" + name + ": " + Why(err)};
  }
  return tmp;
}

namespace {

// failure.json's writers of one run, one at a time: an flock on the
// directory itself (opened anew, so that each writer holds its own lock,
// and no file is left in DIR), waited for kFenceWaitMs at most (a file
// system without flock, or a writer stopped while it held it, leaves the
// rename's wholeness alone to guard the record).
constexpr int kFenceWaitMs = 2000;
constexpr size_t kMaxRecordBytes = 64 << 20;

class FenceLock {
 public:
  explicit FenceLock(int dir_fd) {
    fd_ = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int waited = 0; fd_ >= 0 && flock(fd_, LOCK_EX | LOCK_NB) != 0; waited += 10) {
      if (errno != EWOULDBLOCK || waited >= kFenceWaitMs) {
        close(fd_);
        fd_ = -1;
        break;
      }
      usleep(10 * 1000);
    }
  }
  ~FenceLock() {
    if (fd_ >= 0) close(fd_);
  }
  FenceLock(const FenceLock&) = delete;
  FenceLock& operator=(const FenceLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

Status LogDir::WriteFailure(const std::string& json, const RecordStamp& stamp, bool* kept) {
  if (kept) *kept = false;
  const std::string record = Stamped(json, stamp);
  FenceLock lock(dir_fd_);
  const std::string stored = ReadNoFollow(dir_fd_, kFailure, kMaxRecordBytes);
  const bool same_run = stored.compare(0, failure_prefix_.size(), failure_prefix_) == 0;
  if (!MayWrite(stored, same_run, stamp)) {
    if (kept) *kept = true;
    return Ok();
  }
  return ReplaceWhole(kFailure, record, true);
}

Status LogDir::WriteEndedWell(const std::string& json, const RecordStamp& stamp) {
  return WritesEndedWell(stamp) ? WriteFailure(json, stamp) : Ok();
}

Status LogDir::WriteNodeRecord(int shim, const std::string& json) {
  return ReplaceWhole(NodeRecordName(shim), json, true);
}

Status LogDir::ReplaceWhole(const std::string& name, const std::string& text, bool sync) {
  auto written = WriteTemp(name, text, sync);
  if (!written.ok()) return written.error();
  if (renameat(dir_fd_, written->c_str(), dir_fd_, name.c_str()) != 0) {
    const int e = errno;
    unlinkat(dir_fd_, written->c_str(), 0);
    return Error{"cannot write " + path_ + "/" + name + ": " + Why(e)};
  }
  return Ok();
}

Status LogDir::KeepFile(const std::string& name, std::string_view data) {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.')
    return Error{"not a file name: '" + name + "'"};
  return ReplaceWhole(name, std::string(data));
}

Status LogDir::WriteStack(int rank, const std::string& text) {
  return ReplaceWhole("rank-" + std::to_string(rank) + ".stack", text);
}

Status LogDir::CopyErrorFile(int rank, const std::string& text) {
  const std::string name = "rank-" + std::to_string(rank) + ".error.json";
  if (!text.empty()) return ReplaceWhole(name, text);
  if (unlinkat(dir_fd_, name.c_str(), 0) != 0 && errno != ENOENT)
    return Error{"cannot remove " + path_ + "/" + name + ": " + Why(errno)};
  return Ok();
}

}  // namespace aml
